import type { Role } from './permissions';

/** The current token version of a token's app or user; null once it is gone. */
export type SessionVersions = (auth: { organisationId: string; subjectId: string; role: Role }) => Promise<number | null>;
