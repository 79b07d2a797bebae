import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * Prefixed, time-ordered ids (`cus_01jd…`): the prefix tells an integrator what an id names, and the
 * leading timestamp keeps b-tree inserts local. 48 bits of milliseconds, then 80 random bits.
 */
export function newId(prefix: string, now = Date.now()): string {
  let time = '';
  let remaining = now;
  for (let i = 0; i < 10; i += 1) {
    time = CROCKFORD[remaining % 32] + time;
    remaining = Math.floor(remaining / 32);
  }
  const random = randomBytes(10);
  let tail = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of random) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      tail += CROCKFORD[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  return `${prefix}_${time}${tail}`;
}
