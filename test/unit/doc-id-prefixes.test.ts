import fs from 'node:fs';
import path from 'node:path';

/**
 * The ids the docs show (`cus_…`, `pln_basic…`) start with a prefix the code really gives: an integrator
 * matching on `bpl_` where the API answers `pln_` finds nothing.
 */
const ROOT = path.resolve(__dirname, '../..');

function filesUnder(dir: string, extension: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full, extension);
    return entry.name.endsWith(extension) ? [full] : [];
  });
}

/** The prefixes the code gives ids: `newId('cus')`, and the few ids it spells out (`whd_${hash}`, `'ck_'`). */
function prefixesInCode(): Set<string> {
  const prefixes = new Set<string>();
  for (const file of filesUnder(path.join(ROOT, 'src'), '.ts')) {
    const source = fs.readFileSync(file, 'utf8');
    for (const match of source.matchAll(/newId\('([a-z]+)'/g)) prefixes.add(match[1]!);
    for (const match of source.matchAll(/[`'"]([a-z]{2,4})_(?:\$\{|['"`])/g)) prefixes.add(match[1]!);
  }
  return prefixes;
}

/** Every id a doc shows with its varying part left out: `prefix_…`, `prefix_name…` or `prefix_...`. */
function idsInDocs(): Array<{ file: string; id: string; prefix: string }> {
  const files = [...filesUnder(path.join(ROOT, 'docs'), '.md'), path.join(ROOT, 'README.md')];
  return files.flatMap((file) =>
    [...fs.readFileSync(file, 'utf8').matchAll(/\b([a-z]{2,4})_([A-Za-z0-9]*)(?:…|\.\.\.)/g)].map((match) => ({
      file: path.relative(ROOT, file),
      id: match[0],
      prefix: match[1]!,
    })),
  );
}

describe('ids in the docs', () => {
  it('when a doc shows an id, then its prefix is one the code gives ids', () => {
    const known = prefixesInCode();
    const shown = idsInDocs();
    expect(shown.length).toBeGreaterThan(20);
    expect(shown.filter(({ prefix }) => !known.has(prefix))).toEqual([]);
  });
});
