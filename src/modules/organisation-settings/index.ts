export { getOrganisationSettings, organisationToday } from './settings.repository';
export type { PaymentDetails } from './settings.repository';
export { createOrganisationSettingsService } from './settings.service';
