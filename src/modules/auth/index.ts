import type { Knex } from 'knex';
import { createUserRepository } from './users.repository';

export { createAccessTokens } from './access-tokens';
export type { AccessTokenIssuer } from './access-tokens';
export { createAppService } from './apps.service';
export { createAuthService, createSessionVersions } from './auth.service';
export { hashSecret, verifySecret } from './secrets';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type UserAccess = Pick<ReturnType<typeof createUserRepository>, 'createAdmin' | 'findByEmail'>;
export const usersIn = (db: Knex): UserAccess => createUserRepository(db);
