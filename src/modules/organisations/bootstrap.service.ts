import type { Knex } from 'knex';
import { AppError } from '../../domain/errors';
import { hashSecret, usersIn } from '../auth';
import { createOrganisationRepository } from './organisations.repository';

/**
 * Creates, or finds, an organisation and its first admin. Running it twice with the same arguments
 * answers the same ids; an existing admin's password is left as it is.
 */
export async function bootstrapOrganisation(
  db: Knex,
  input: { organisationName: string; email: string; password: string },
): Promise<{ organisationId: string; adminUserId: string }> {
  const organisations = createOrganisationRepository(db);
  const users = usersIn(db);
  const passwordHash = await hashSecret(input.password);
  return db.transaction(async (trx) => {
    const organisation = await organisations.findOrCreate(trx, input.organisationName);
    const existing = await users.findByEmail(input.email, trx);
    if (existing && existing.organisation_id !== organisation.id) {
      throw AppError.conflict(`${input.email} is already an admin of another organisation`);
    }
    const admin = existing ?? (await users.createAdmin(trx, { organisationId: organisation.id, email: input.email, passwordHash }));
    return { organisationId: organisation.id, adminUserId: admin.id };
  });
}
