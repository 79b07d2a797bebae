/**
 * A span of time cut into the coarsest pieces rollups hold whole: UTC days, then UTC hours, then quarter
 * hours, and at either end the part of a quarter hour that only raw events can answer. Summed, the pieces'
 * folds are the span's: sum and count add, max takes the greatest, latest the latest.
 */
export type PieceGrain = 'day' | 'hour' | 'quarter' | 'raw';

export interface Piece {
  grain: PieceGrain;
  /** Inclusive start and exclusive end, in epoch milliseconds. */
  from: number;
  to: number;
}

const QUARTER = 15 * 60_000;
const HOUR = 60 * 60_000;
const DAY = 24 * HOUR;

const floorTo = (instant: number, width: number) => Math.floor(instant / width) * width;
const ceilTo = (instant: number, width: number) => Math.ceil(instant / width) * width;

/**
 * The pieces of [from, to), in time order, adjacent and non-overlapping, each on its grain's edges (raw
 * pieces excepted): at most one raw piece at each end, then quarters up to the first hour edge, hours up to
 * the first day edge, whole days, and the same in reverse towards the end. Coarser pieces are taken
 * wherever they fit whole, so a month needs its days and at most 23 hours and 3 quarters at each end.
 */
export function piecesOf(from: number, to: number): Piece[] {
  if (to <= from) return [];
  const start = ceilTo(from, QUARTER);
  const end = floorTo(to, QUARTER);
  if (start >= end) return [{ grain: 'raw', from, to }];
  const pieces: Piece[] = [];
  const push = (grain: PieceGrain, a: number, b: number) => {
    if (b > a) pieces.push({ grain, from: a, to: b });
  };
  push('raw', from, start);
  const grains: Array<[PieceGrain, number]> = [
    ['day', DAY],
    ['hour', HOUR],
    ['quarter', QUARTER],
  ];
  // The coarsest grain that fits whole sets the middle; each finer one fills what lies between edges.
  const cut = (a: number, b: number, level: number) => {
    if (b <= a) return;
    const [grain, width] = grains[level]!;
    const inner = [ceilTo(a, width), floorTo(b, width)] as const;
    if (inner[0] >= inner[1]) {
      cut(a, b, level + 1);
      return;
    }
    if (level + 1 < grains.length) cut(a, inner[0], level + 1);
    push(grain, inner[0], inner[1]);
    if (level + 1 < grains.length) cut(inner[1], b, level + 1);
  };
  cut(start, end, 0);
  push('raw', end, to);
  return pieces;
}
