export { invoiceSettlements } from './invoice-settlements';
