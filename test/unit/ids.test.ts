import { newId } from '../../src/db/ids';

describe('newId', () => {
  it('when ids are made in a row within one millisecond, then they sort in the order made', () => {
    const ids = Array.from({ length: 1000 }, () => newId('itm', 1_763_800_000_000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(1000);
  });

  it('when time moves on, then later ids sort after earlier ones', () => {
    expect(newId('x', 1_763_800_000_001) > newId('x', 1_763_800_000_000 - 1)).toBe(true);
    expect(newId('cus')).toMatch(/^cus_[0-9a-hjkmnp-tv-z]{26}$/);
  });
});
