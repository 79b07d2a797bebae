import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { ConfigError } from '../config';

/**
 * Secrets at rest (webhook signing secrets, answers kept for idempotent replay): sealed with AES-256-GCM
 * under the deployment's `SECRETS_KEY` before they reach Postgres. A sealed value names the key that
 * sealed it, so keys can rotate: the new key seals, and the previous ones (`SECRETS_KEYS_PREVIOUS`) still
 * open what they sealed until it is sealed again.
 *
 * Format: `sb1:<key id>:<iv>:<ciphertext>:<tag>`, base64url parts; the key id is the first 8 hex digits of
 * the key's SHA-256 under a label of its own (it names the key without revealing it).
 */
export interface SecretBox {
  seal(plain: string): string;
  /** The plain text of a sealed value; a value that was never sealed (left by an older version) as it is. */
  open(value: string): string;
  isSealed(value: unknown): value is string;
}

const PREFIX = 'sb1:';

interface Key {
  id: string;
  bytes: Buffer;
}

function keyOf(material: string): Key {
  return {
    id: createHash('sha256').update(`secret-box key id:${material}`).digest('hex').slice(0, 8),
    bytes: createHash('sha256').update(`secret-box key:${material}`).digest(),
  };
}

export function createSecretBox(current: string, previous: readonly string[] = []): SecretBox {
  const sealing = keyOf(current);
  const keys = new Map([sealing, ...previous.map(keyOf)].map((key) => [key.id, key]));
  const isSealed = (value: unknown): value is string => typeof value === 'string' && value.startsWith(PREFIX);
  return {
    isSealed,
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', sealing.bytes, iv);
      const text = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [`${PREFIX}${sealing.id}`, iv.toString('base64url'), text.toString('base64url'), cipher.getAuthTag().toString('base64url')].join(':');
    },
    open(value) {
      if (!isSealed(value)) return value;
      const [, id, iv, text, tag] = value.split(':');
      const key = keys.get(id ?? '');
      if (!key || !iv || text === undefined || !tag) throw new ConfigError(`a secret sealed with key ${id} cannot be opened: that key is not among SECRETS_KEY and SECRETS_KEYS_PREVIOUS`);
      const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(text, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
