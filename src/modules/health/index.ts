export { createHealthService } from './health.service';
