import fc from 'fast-check';
import { piecesOf, type PieceGrain } from '../../src/modules/usage/rollup-pieces';

const MINUTE = 60_000;
const WIDTH: Record<Exclude<PieceGrain, 'raw'>, number> = { quarter: 15 * MINUTE, hour: 60 * MINUTE, day: 24 * 60 * MINUTE };
const seed = process.env.ROLLUP_PIECES_SEED ? Number(process.env.ROLLUP_PIECES_SEED) : undefined;

/** Instants around 2026, some on edges of every grain, some anywhere to the millisecond. */
const instant = fc.oneof(
  fc.integer({ min: 0, max: 400 * 24 * 4 }).map((quarters) => Date.UTC(2026, 0, 1) + quarters * 15 * MINUTE),
  fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 1, 1) }),
);

describe('rollup pieces', () => {
  it('when a span is cut, then its pieces tile it exactly, each whole on its grain, coarsest first fit, at most one raw piece at each end', () => {
    fc.assert(
      fc.property(instant, instant, (a, b) => {
        const [from, to] = a <= b ? [a, b] : [b, a];
        const pieces = piecesOf(from, to);
        if (from === to) return expect(pieces).toEqual([]);
        // Adjacent, in order, covering [from, to).
        expect(pieces[0]!.from).toBe(from);
        expect(pieces.at(-1)!.to).toBe(to);
        pieces.forEach((piece, index) => {
          expect(piece.to).toBeGreaterThan(piece.from);
          if (index > 0) expect(piece.from).toBe(pieces[index - 1]!.to);
          if (piece.grain !== 'raw') {
            const width = WIDTH[piece.grain];
            expect([piece.from % width, piece.to % width]).toEqual([0, 0]);
          }
        });
        const raw = pieces.filter((piece) => piece.grain === 'raw');
        expect(raw.length).toBeLessThanOrEqual(2);
        for (const piece of raw) expect(piece.to - piece.from).toBeLessThan(2 * WIDTH.quarter);
        // No finer piece could have been a coarser one: finer time between two edges of a coarser grain is
        // less than one of its widths on each side.
        for (const [grain, width] of Object.entries(WIDTH)) {
          const finer = pieces.filter((piece) => piece.grain === 'raw' || WIDTH[piece.grain as keyof typeof WIDTH] < width);
          for (const piece of finer) {
            const whole = Math.ceil(piece.from / width) * width;
            expect({ grain, fits: whole + width <= piece.to }).toEqual({ grain, fits: false });
          }
        }
        // Grains rise then fall: raw, quarters, hours, days, hours, quarters, raw.
        const rank = { raw: 0, quarter: 1, hour: 2, day: 3 } as const;
        const ranks: number[] = pieces.map((piece) => rank[piece.grain]);
        const top = ranks.indexOf(Math.max(...ranks));
        expect(ranks.slice(0, top + 1)).toEqual([...ranks.slice(0, top + 1)].sort((x, y) => x - y));
        expect(ranks.slice(top)).toEqual([...ranks.slice(top)].sort((x, y) => y - x));
        expect(pieces.length).toBeLessThanOrEqual(7);
      }),
      { numRuns: 500, seed },
    );
  });

  it('when a month of a time zone is cut, then its whole UTC days are one piece and the ends take hours and quarters', () => {
    // October 2026 in Asia/Kathmandu (+05:45): 2026-09-30T18:15Z to 2026-10-31T18:15Z.
    const pieces = piecesOf(Date.parse('2026-09-30T18:15:00Z'), Date.parse('2026-10-31T18:15:00Z'));
    expect(pieces.map((piece) => [piece.grain, new Date(piece.from).toISOString(), new Date(piece.to).toISOString()])).toEqual([
      ['quarter', '2026-09-30T18:15:00.000Z', '2026-09-30T19:00:00.000Z'],
      ['hour', '2026-09-30T19:00:00.000Z', '2026-10-01T00:00:00.000Z'],
      ['day', '2026-10-01T00:00:00.000Z', '2026-10-31T00:00:00.000Z'],
      ['hour', '2026-10-31T00:00:00.000Z', '2026-10-31T18:00:00.000Z'],
      ['quarter', '2026-10-31T18:00:00.000Z', '2026-10-31T18:15:00.000Z'],
    ]);
    expect(piecesOf(Date.parse('2026-10-01T10:07:00Z'), Date.parse('2026-10-01T10:11:00Z'))).toEqual([{ grain: 'raw', from: Date.parse('2026-10-01T10:07:00Z'), to: Date.parse('2026-10-01T10:11:00Z') }]);
  });
});
