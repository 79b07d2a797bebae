import { randomBytes } from 'node:crypto';

export function newClientKey(): string {
  return `ck_${randomBytes(16).toString('hex')}`;
}

export function newClientSecret(): string {
  return `cs_${randomBytes(32).toString('base64url')}`;
}
