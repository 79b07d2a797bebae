export { pageInMemory } from './in-memory-page';
export { COUNTRY_CODES } from './geography.repository';
