import { newId } from '../../src/db/ids';
import { ingestionShardOf, usageIngestionWorkflowId } from '../../workflows/ids';

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

describe('ingestionShardOf', () => {
  it('when batch ids made in a row are spread over 4 shards, then each shard takes about a quarter', () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 10_000; i += 1) counts[ingestionShardOf(newId('ubt'), 4)]! += 1;
    for (const count of counts) expect(count).toBeGreaterThan(2_200);
  });

  it('when the hash is taken of known ids, then it gives the shards it always gave: a batch in flight is looked for where it was sent', () => {
    expect(['ubt_01m8dccswy2csyve048qzhhe5c', 'ubt_01m8dccsx6svkqynw9ftfxtj5s', 'ubt_01m8dccsx7k7ygfa1jd68vq1j9'].map((id) => ingestionShardOf(id, 8))).toEqual([6, 4, 0]);
  });

  it('when there is one shard, then every batch goes to shard 0, whose workflow id is the organisation\'s alone', () => {
    expect(new Set(Array.from({ length: 100 }, () => ingestionShardOf(newId('ubt'), 1)))).toEqual(new Set([0]));
    expect(usageIngestionWorkflowId('org_1', 0)).toBe('usage-ingestion:org_1');
    expect(usageIngestionWorkflowId('org_1', 3)).toBe('usage-ingestion:org_1:3');
  });
});
