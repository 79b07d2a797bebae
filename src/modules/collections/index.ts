export { createCollectionsService } from './collections.service';
export type { CollectionsService } from './collections.service';
