import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { pdfFile } from './read-back';

/** Where the reference images live, committed with the code. */
export const GOLDEN_DIR = path.join(__dirname, '..', 'golden');

/** The resolution pages are rendered at: an A4 page is 496 × 702 pixels, a few tens of KB in grey. */
export const GOLDEN_DPI = 60;

/** A pixel counts as changed when its grey level moves by more than this (0 to 255): anti-aliasing noise stays below it. */
export const PIXEL_THRESHOLD = 48;

/** At most this share of a page's pixels may change before the page counts as different. */
export const MAX_CHANGED_RATIO = 0.002;

/** The first page of a PDF as a greyscale PNG, rendered by poppler's pdftoppm. */
export function renderFirstPage(pdf: Buffer): Buffer {
  const file = pdfFile(pdf);
  const prefix = path.join(path.dirname(file), 'page');
  execFileSync('pdftoppm', ['-r', String(GOLDEN_DPI), '-gray', '-png', '-f', '1', '-l', '1', '-singlefile', file, prefix]);
  return fs.readFileSync(`${prefix}.png`);
}

export interface Comparison {
  /** Pixels whose grey level moved by more than PIXEL_THRESHOLD, out of `total`; every one when the sizes differ. */
  changed: number;
  total: number;
  ratio: number;
  /** The expected page in faint grey, the changed pixels in black. */
  diff: PNG;
}

export function comparePages(expected: Buffer, actual: Buffer): Comparison {
  const a = PNG.sync.read(expected);
  const b = PNG.sync.read(actual);
  const diff = new PNG({ width: a.width, height: a.height });
  const total = a.width * a.height;
  if (a.width !== b.width || a.height !== b.height) return { changed: total, total, ratio: 1, diff };
  let changed = 0;
  for (let pixel = 0; pixel < total; pixel += 1) {
    const offset = pixel * 4;
    const moved = Math.abs(a.data[offset]! - b.data[offset]!) > PIXEL_THRESHOLD;
    if (moved) changed += 1;
    const grey = moved ? 0 : 200 + Math.round((a.data[offset]! * 55) / 255);
    diff.data[offset] = diff.data[offset + 1] = diff.data[offset + 2] = grey;
    diff.data[offset + 3] = 255;
  }
  return { changed, total, ratio: changed / total, diff };
}

/**
 * Compares a rendered page with its golden image. With UPDATE_GOLDEN=1 the golden image is written
 * instead (review it before committing). On a difference past MAX_CHANGED_RATIO, the actual page and a
 * diff image are written to a new temporary directory, which the failure names.
 */
export function expectMatchesGolden(name: string, actual: Buffer): Comparison | undefined {
  const golden = path.join(GOLDEN_DIR, `${name}.png`);
  if (process.env.UPDATE_GOLDEN === '1') {
    fs.mkdirSync(GOLDEN_DIR, { recursive: true });
    fs.writeFileSync(golden, actual);
    return undefined;
  }
  if (!fs.existsSync(golden)) throw new Error(`no golden image ${golden}: render it with UPDATE_GOLDEN=1 and review it`);
  const comparison = comparePages(fs.readFileSync(golden), actual);
  if (comparison.ratio > MAX_CHANGED_RATIO) {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), `golden-${name}-`));
    fs.writeFileSync(path.join(out, 'actual.png'), actual);
    fs.writeFileSync(path.join(out, 'diff.png'), PNG.sync.write(comparison.diff));
    throw new Error(
      `${name}: ${comparison.changed} of ${comparison.total} pixels changed (${(comparison.ratio * 100).toFixed(3)}%, at most ${(MAX_CHANGED_RATIO * 100).toFixed(1)}% allowed). ` +
        `See ${out}/actual.png and ${out}/diff.png; if the change is meant, run with UPDATE_GOLDEN=1 and commit the new image.`,
    );
  }
  return comparison;
}
