import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
const RANDOM_BITS = 80n;

function encode(value: bigint, length: number): string {
  let text = '';
  for (let i = 0; i < length; i += 1) {
    text = CROCKFORD[Number(value & 31n)] + text;
    value >>= 5n;
  }
  return text;
}

let lastTime = -1;
let lastRandom = 0n;

/**
 * Prefixed, time-ordered ids (`cus_01jd…`): the prefix tells an integrator what an id names, and the
 * leading timestamp keeps b-tree inserts local. 48 bits of milliseconds, then 80 random bits; within one
 * millisecond the random part counts up (monotonic ULID), so ids made in a row sort in the order made.
 */
export function newId(prefix: string, now = Date.now()): string {
  if (now === lastTime) {
    lastRandom = (lastRandom + 1n) & ((1n << RANDOM_BITS) - 1n);
  } else {
    lastTime = now;
    lastRandom = BigInt(`0x${randomBytes(10).toString('hex')}`);
  }
  return `${prefix}_${encode(BigInt(now), 10)}${encode(lastRandom, 16)}`;
}
