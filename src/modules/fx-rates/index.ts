export { findEffectiveRate } from './fx-rates.repository';
export { createFxRateService } from './fx-rates.service';
export type { FxRateService } from './fx-rates.service';
