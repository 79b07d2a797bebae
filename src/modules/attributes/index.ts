export { createAttributeService } from './attributes.service';
export type { AttributeService } from './attributes.service';
export { createOrganisationAttributeService } from './organisation-attributes.service';
