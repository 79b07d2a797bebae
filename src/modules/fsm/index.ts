export { createFsmService } from './fsm.service';
