export { getOrganisationSettings, organisationToday } from './settings.repository';
export { createOrganisationSettingsService } from './settings.service';
