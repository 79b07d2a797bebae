export { bootstrapOrganisation } from './bootstrap.service';
