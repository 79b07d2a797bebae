import { DIMENSION_VALUE_MAX_BYTES, keptAsText } from '../../src/domain/dimension-value';
import { dimensionValue } from '../../src/modules/usage/dimension-value';

describe('dimensionValue: a value as rollups key it', () => {
  it('when a value is at most 400 bytes of UTF-8, then it is kept as it is; one byte more, then as its SHA-256', () => {
    const edge = 'ü'.repeat(DIMENSION_VALUE_MAX_BYTES / 2);
    expect([keptAsText(edge), dimensionValue(edge)]).toEqual([true, edge]);
    const past = `${edge}a`;
    expect(keptAsText(past)).toBe(false);
    // The digest of the text's UTF-8, as Postgres's sha256(convert_to(text, 'UTF8')) gives it.
    expect(dimensionValue('x'.repeat(401))).toBe('sha256:257d2e9bd85ba7902e8b8accd833319a4d78332321d320ef3aaa05270ee9f416');
    expect(dimensionValue(past)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(dimensionValue(past)).not.toBe(dimensionValue(`${edge}b`));
  });
});
