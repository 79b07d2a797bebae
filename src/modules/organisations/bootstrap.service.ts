import type { Knex } from 'knex';
import { AppError } from '../../domain/errors';
import { hashSecret, usersIn, verifySecret } from '../auth';
import { createOrganisationSettingsService, getOrganisationSettings } from '../organisation-settings';
import { createOrganisationRepository } from './organisations.repository';

/**
 * Creates, or finds, an organisation and its first admin. Running it twice with the same arguments
 * answers the same ids; an existing admin given another password is refused (bootstrap sets no password
 * but the first). Another e-mail address makes another admin of the same organisation. `baseCurrency` (ISO 4217, checked
 * by the caller) is the new organisation's base currency, in which every invoice's total is also kept; an
 * existing organisation with another base currency is refused (its settings change it).
 */
export async function bootstrapOrganisation(
  db: Knex,
  input: { organisationName: string; email: string; password: string; baseCurrency?: string },
): Promise<{ organisationId: string; adminUserId: string; baseCurrency: string }> {
  const organisations = createOrganisationRepository(db);
  const users = usersIn(db);
  const passwordHash = await hashSecret(input.password);
  return db.transaction(async (trx) => {
    const { organisation, created } = await organisations.findOrCreate(trx, input.organisationName);
    const settings = await getOrganisationSettings(trx, organisation.id);
    let baseCurrency = settings.base_currency;
    if (input.baseCurrency !== undefined && input.baseCurrency !== baseCurrency) {
      if (!created) {
        throw AppError.conflict(`${input.organisationName} already exists with base currency ${baseCurrency}; change it with PUT /organisation/settings {"baseCurrency": "${input.baseCurrency}"}`);
      }
      baseCurrency = (await createOrganisationSettingsService(trx).update(organisation.id, { baseCurrency: input.baseCurrency })).baseCurrency;
    }
    const existing = await users.findByEmail(input.email, trx);
    if (existing && existing.organisation_id !== organisation.id) {
      throw AppError.conflict(`${input.email} is already an admin of another organisation`);
    }
    // Bootstrap changes no password: a run with another one would seem to have set it.
    if (existing && !(await verifySecret(input.password, existing.password_hash))) {
      throw AppError.conflict(`${input.email} is already an admin of ${input.organisationName}, with another password; bootstrap does not change passwords: log in with the current one`);
    }
    const admin = existing ?? (await users.createAdmin(trx, { organisationId: organisation.id, email: input.email, passwordHash }));
    return { organisationId: organisation.id, adminUserId: admin.id, baseCurrency };
  });
}
