import { randomUUID } from 'node:crypto';
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

export function createAccessTokens(secret: string, ttlSeconds: number): AccessTokenIssuer {
  const key = new TextEncoder().encode(secret);
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
      try {
        const { payload } = await jwtVerify(token, key, { algorithms: [ALGORITHM], requiredClaims: ['sub', 'exp', 'iat', 'jti'] });
        const role = payload.role as Role;
        if (typeof payload.org !== 'string' || !ROLES.includes(role) || !payload.sub || !payload.jti) return null;
        // A token issued before versions were carried is of version 0, the first.
        const version = typeof payload.ver === 'number' && Number.isInteger(payload.ver) ? payload.ver : 0;
        return { organisationId: payload.org, subjectId: payload.sub, role, tokenId: payload.jti, tokenVersion: version };
      } catch (error) {
        if (error instanceof joseErrors.JOSEError) return null;
        throw error;
      }
    },
  };
}
