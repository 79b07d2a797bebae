export { getOrganisationSettings, organisationToday, zoneOf } from './settings.repository';
export type { PaymentDetails } from './settings.repository';
export { createOrganisationSettingsService } from './settings.service';
