/**
 * Customer credit as lots (docs/adjustments.md, "Customer credit"): every credit added is a lot with what is
 * left of it and, maybe, when it expires. Credit is taken from the lots that expire first, then the oldest,
 * and lots that never expire last; credit given back returns to the lots it was taken from.
 */
import { Decimal, toDecimal } from './money';

export interface CreditLot {
  id: string;
  remaining: string;
  /** ISO instant, or null: never expires. */
  expiresAt: string | null;
  /** ISO instant: ties between lots expiring together go to the oldest. */
  createdAt: string;
}

/** A part of an entry: the lot it took from (negative) or gave back to (positive). */
export interface Draw {
  lotId: string;
  amount: string;
}

/** The lots in the order credit is taken from them. */
export function drawOrder<T extends CreditLot>(lots: readonly T[]): T[] {
  const at = (instant: string | null) => (instant === null ? Number.POSITIVE_INFINITY : Date.parse(instant));
  return [...lots].sort((a, b) => at(a.expiresAt) - at(b.expiresAt) || Date.parse(a.createdAt) - Date.parse(b.createdAt) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Takes `amount` from the lots in draw order, never more than a lot holds: the draws, negative. Takes what
 * the lots hold if that is less; the caller compares.
 */
export function drawFrom(lots: readonly CreditLot[], amount: string | Decimal): Draw[] {
  let wanted = toDecimal(amount);
  const draws: Draw[] = [];
  for (const lot of drawOrder(lots)) {
    if (wanted.lessThanOrEqualTo(0)) break;
    const taken = Decimal.min(wanted, lot.remaining);
    if (taken.lessThanOrEqualTo(0)) continue;
    draws.push({ lotId: lot.id, amount: taken.negated().toFixed() });
    wanted = wanted.minus(taken);
  }
  return draws;
}

/**
 * Takes `amount` from the `first` lots (in that order: the lots a credit went to, to take it back from
 * them), then from the others in draw order.
 */
export function drawPreferring(lots: readonly CreditLot[], first: readonly string[], amount: string | Decimal): Draw[] {
  const byId = new Map(lots.map((lot) => [lot.id, lot]));
  const preferred = [...new Set(first)].map((id) => byId.get(id)).filter((lot): lot is CreditLot => lot !== undefined);
  let wanted = toDecimal(amount);
  const draws: Draw[] = [];
  for (const lot of preferred) {
    const taken = Decimal.min(wanted, lot.remaining);
    if (taken.lessThanOrEqualTo(0)) continue;
    draws.push({ lotId: lot.id, amount: taken.negated().toFixed() });
    wanted = wanted.minus(taken);
  }
  const rest = lots.filter((lot) => !preferred.includes(lot));
  return [...draws, ...drawFrom(rest, Decimal.max(wanted, 0))];
}

/** Per lot, what a set of entries (an invoice's takes and give-backs) still holds of it: taken less given back. */
export function outstanding(entries: ReadonlyArray<readonly Draw[]>): Map<string, Decimal> {
  const held = new Map<string, Decimal>();
  for (const draws of entries) for (const draw of draws) held.set(draw.lotId, (held.get(draw.lotId) ?? new Decimal(0)).minus(draw.amount));
  for (const [lotId, amount] of held) if (amount.lessThanOrEqualTo(0)) held.delete(lotId);
  return held;
}

/** Gives back up to `amount` to the lots that hold it, the last taken first: the draws, positive. */
export function giveBack(held: ReadonlyMap<string, Decimal>, amount: string | Decimal): Draw[] {
  let left = toDecimal(amount);
  const draws: Draw[] = [];
  for (const [lotId, owed] of [...held].reverse()) {
    if (left.lessThanOrEqualTo(0)) break;
    const back = Decimal.min(left, owed);
    draws.push({ lotId, amount: back.toFixed() });
    left = left.minus(back);
  }
  return draws;
}
