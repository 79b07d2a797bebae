export { createExportService } from './exports.service';
export { createObjectExportService } from './object-export.service';
export { createObjectService } from './objects.service';
