import { createSecretKey, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { AuthContext } from '../../http/route';
import type { Role } from '../../http/permissions';

/** One pinned algorithm: a token signed any other way (or not at all) is rejected before its claims are read. */
const ALGORITHM = 'HS256';
const ROLES: readonly Role[] = ['Admin', 'SystemUser'];

export interface AccessTokenIssuer {
  issue(subject: { subjectId: string; organisationId: string; role: Role; version: number }): Promise<{ token: string; expiresIn: number }>;
  verify(token: string): Promise<AuthContext | null>;
}

/** Verified tokens kept, at most: past it the cache starts again (a token is verified anew, never trusted blind). */
const VERIFIED_KEPT = 10_000;

export function createAccessTokens(secret: string, ttlSeconds: number): AccessTokenIssuer {
  // A key object once, rather than raw bytes that jose would import again at every verification.
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  // A token is the same claims under the same signature every time it comes: what verifying it said is
  // kept until it expires, so that a client's next request with it costs a lookup, not an HMAC and a parse.
  const verified = new Map<string, { auth: AuthContext; expiresAtMs: number }>();
  return {
    async issue({ subjectId, organisationId, role, version }) {
      const token = await new SignJWT({ org: organisationId, role, ver: version })
        .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
        .setSubject(subjectId)
        .setJti(randomUUID())
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`)
        .sign(key);
      return { token, expiresIn: ttlSeconds };
    },
    async verify(token) {
      const kept = verified.get(token);
      if (kept) {
        if (Date.now() < kept.expiresAtMs) return kept.auth;
        verified.delete(token);
        return null;
      }
      try {
        const { payload } = await jwtVerify(token, key, { algorithms: [ALGORITHM], requiredClaims: ['sub', 'exp', 'iat', 'jti'] });
        const role = payload.role as Role;
        if (typeof payload.org !== 'string' || !ROLES.includes(role) || !payload.sub || !payload.jti) return null;
        // A token issued before versions were carried is of version 0, the first.
        const version = typeof payload.ver === 'number' && Number.isInteger(payload.ver) ? payload.ver : 0;
        const auth: AuthContext = Object.freeze({ organisationId: payload.org, subjectId: payload.sub, role, tokenId: payload.jti, tokenVersion: version });
        if (verified.size >= VERIFIED_KEPT) verified.clear();
        verified.set(token, { auth, expiresAtMs: payload.exp! * 1000 });
        return auth;
      } catch (error) {
        if (error instanceof joseErrors.JOSEError) return null;
        throw error;
      }
    },
  };
}
