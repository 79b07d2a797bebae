export { pageInMemory } from './in-memory-page';
