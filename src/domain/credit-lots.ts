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
 * Takes `amount` back from the lots a credit went to (`first`: each lot with what it was given, in that
 * order), at most what each was given, then the rest from every lot in draw order: credit taken back
 * comes from where it went, so expiring credit never turns into credit that does not expire.
 */
export function drawPreferring(lots: readonly CreditLot[], first: readonly Draw[], amount: string | Decimal): Draw[] {
  const left = new Map(lots.map((lot) => [lot.id, toDecimal(lot.remaining)]));
  let wanted = toDecimal(amount);
  const taken = new Map<string, Decimal>();
  for (const given of first) {
    const available = left.get(given.lotId);
    if (available === undefined || wanted.lessThanOrEqualTo(0)) continue;
    const take = Decimal.min(wanted, toDecimal(given.amount), available);
    if (take.lessThanOrEqualTo(0)) continue;
    left.set(given.lotId, available.minus(take));
    taken.set(given.lotId, (taken.get(given.lotId) ?? new Decimal(0)).plus(take));
    wanted = wanted.minus(take);
  }
  const rest = drawFrom(
    lots.map((lot) => ({ ...lot, remaining: left.get(lot.id)!.toFixed() })),
    Decimal.max(wanted, 0),
  );
  for (const draw of rest) taken.set(draw.lotId, (taken.get(draw.lotId) ?? new Decimal(0)).minus(draw.amount));
  return [...taken].map(([lotId, amount]) => ({ lotId, amount: amount.negated().toFixed() }));
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
