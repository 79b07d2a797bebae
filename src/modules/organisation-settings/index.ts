export { getOrganisationSettings, organisationToday, usageRetentions, zoneOf } from './settings.repository';
export type { PaymentDetails } from './settings.repository';
export { createOrganisationSettingsService } from './settings.service';
