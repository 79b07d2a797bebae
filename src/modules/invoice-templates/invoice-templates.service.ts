import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { imageSize } from 'image-size';
import jpeg from 'jpeg-js';
import type { Knex } from 'knex';
import { PNG } from 'pngjs';
import { isUniqueViolation } from '../../db/knex';
import { AppError, DomainError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { createInvoiceTemplateRepository, TEMPLATE_NAME_UNIQUE, TEMPLATE_ONE_DEFAULT, type InvoiceTemplateLogo, type InvoiceTemplateRow } from './invoice-templates.repository';
import { LOGO_MAX_BYTES, LOGO_MAX_SIDE, type CreateTemplateBody, type InvoiceTemplate, type UpdateTemplateBody } from './invoice-templates.schemas';

export function toInvoiceTemplate(row: InvoiceTemplateRow): InvoiceTemplate {
  return {
    id: row.id,
    name: row.name,
    accentColor: row.accent_color,
    footerText: row.footer_text,
    legalText: row.legal_text,
    isDefault: row.is_default,
    logo: row.logo_content_type && row.logo_size !== null && row.logo_sha256 ? { contentType: row.logo_content_type, size: row.logo_size, sha256: row.logo_sha256 } : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A unique violation is the caller's conflict; anything else goes on as it is. */
function conflicts(error: unknown): never {
  if (isUniqueViolation(error, TEMPLATE_NAME_UNIQUE)) throw AppError.conflict('An invoice template with this name exists');
  if (isUniqueViolation(error, TEMPLATE_ONE_DEFAULT)) throw AppError.conflict('Another template became the default at the same time; try again');
  throw error;
}

/** What an upload carries, as the multipart parser hands it over. */
export interface UploadedLogo {
  size: number;
  buffer: Buffer;
}

/** Samples per pixel of each PNG colour type. */
const PNG_SAMPLES: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
/** Adam7 passes: first column and row, and the step between them. */
const ADAM7 = [[0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2]] as const;

/**
 * pngjs's synchronous reader does not report pixel data that is not zlib or is too short (it hands back
 * blank pixels), so the IDAT stream is inflated here first and must hold exactly the rows the header
 * announces.
 */
function checkPngData(data: Buffer): void {
  const parts: Buffer[] = [];
  for (let pos = 8; pos + 8 <= data.length; ) {
    const length = data.readUInt32BE(pos);
    if (data.toString('latin1', pos + 4, pos + 8) === 'IDAT') parts.push(data.subarray(pos + 8, pos + 8 + length));
    pos += 12 + length;
  }
  const [width, height, depth, colourType, interlaced] = [data.readUInt32BE(16), data.readUInt32BE(20), data[24]!, data[25]!, data[28] === 1];
  const bitsPerPixel = depth * (PNG_SAMPLES[colourType] ?? 4);
  const expected = (interlaced ? ADAM7 : [[0, 0, 1, 1] as const])
    .map(([x0, y0, dx, dy]) => ({ columns: Math.ceil((width - x0) / dx), rows: Math.ceil((height - y0) / dy) }))
    .filter(({ columns, rows }) => columns > 0 && rows > 0)
    .reduce((sum, pass) => sum + pass.rows * (1 + Math.ceil((pass.columns * bitsPerPixel) / 8)), 0);
  const pixels = zlib.inflateSync(Buffer.concat(parts), { maxOutputLength: expected + 1 });
  if (pixels.length !== expected) throw new DomainError('its image data does not decompress to the size its header announces');
}

/** The pixels of a PNG or JPEG, decoded by a well-tested pure JavaScript decoder; a fault is the file's. */
function decode(data: Buffer, type: 'png' | 'jpg'): { width: number; height: number; data: Buffer } {
  if (type === 'png') {
    checkPngData(data);
    return PNG.sync.read(data);
  }
  const image = jpeg.decode(data, { useTArray: true, formatAsRGBA: true, maxResolutionInMP: (LOGO_MAX_SIDE * LOGO_MAX_SIDE) / 1e6, maxMemoryUsageInMB: 64 });
  return { width: image.width, height: image.height, data: Buffer.from(image.data) };
}

/**
 * The logo as it is stored, or a 400 that says what is wrong with the file. The upload is read for its
 * dimensions first (a small file may announce a huge image), decoded in full, then written again as an
 * 8-bit PNG (RGB, or RGBA when it has transparency): the PDF renderer only ever reads a PNG this service wrote, never the uploaded bytes.
 */
function checkedLogo(file: UploadedLogo | undefined): InvoiceTemplateLogo {
  if (!file) throw AppError.validation('a multipart field "file" is required', 'body.file');
  const refuse = (problem: string) => AppError.validation(`the logo ${problem}`, 'body.file');
  if (file.buffer.length > LOGO_MAX_BYTES) throw refuse(`must be at most ${LOGO_MAX_BYTES} bytes`);
  let header: ReturnType<typeof imageSize>;
  try {
    header = imageSize(file.buffer);
  } catch {
    throw refuse('must be a PNG or JPEG image');
  }
  if (header.type !== 'png' && header.type !== 'jpg') throw refuse('must be a PNG or JPEG image');
  if (header.width < 1 || header.height < 1 || header.width > LOGO_MAX_SIDE || header.height > LOGO_MAX_SIDE) {
    throw refuse(`must be 1 to ${LOGO_MAX_SIDE} pixels on each side`);
  }
  let pixels: { width: number; height: number; data: Buffer };
  try {
    pixels = decode(file.buffer, header.type);
  } catch (error) {
    throw refuse(`is not a valid ${header.type === 'png' ? 'PNG' : 'JPEG'}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const png = new PNG({ width: pixels.width, height: pixels.height });
  pixels.data.copy(png.data);
  // RGB when every pixel is opaque, so that the PDF carries no transparency mask it does not need.
  const opaque = pixels.data.every((value, index) => index % 4 !== 3 || value === 255);
  const content = PNG.sync.write(png, { colorType: opaque ? 2 : 6 });
  return { content, contentType: 'image/png', size: content.length, sha256: createHash('sha256').update(content).digest('hex') };
}

/** Invoice templates: the branding of the organisation's invoice PDF, the default one's in particular. */
export function createInvoiceTemplateService(db: Knex) {
  const repository = createInvoiceTemplateRepository(db);
  const requireTemplate = async (organisationId: string, id: string) => orNotFound(await repository.find(organisationId, id), 'Invoice template');

  return {
    /** A new default replaces the previous one in the same transaction. */
    async create(organisationId: string, body: CreateTemplateBody): Promise<InvoiceTemplate> {
      try {
        return toInvoiceTemplate(
          await db.transaction(async (trx) => {
            const repo = createInvoiceTemplateRepository(trx);
            if (body.isDefault) {
              await repo.lockDefault(organisationId);
              await repo.clearDefault(organisationId);
            }
            return repo.create(organisationId, body);
          }),
        );
      } catch (error) {
        return conflicts(error);
      }
    },

    async get(organisationId: string, id: string): Promise<InvoiceTemplate> {
      return toInvoiceTemplate(await requireTemplate(organisationId, id));
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<InvoiceTemplate>> {
      const page = await repository.list(organisationId, paging);
      return { ...page, items: page.items.map(toInvoiceTemplate) };
    },

    /** `isDefault: true` makes it the default in place of the previous one; `false` leaves none. */
    async update(organisationId: string, id: string, body: UpdateTemplateBody): Promise<InvoiceTemplate> {
      try {
        const row = await db.transaction(async (trx) => {
          const repo = createInvoiceTemplateRepository(trx);
          if (body.isDefault) {
            await repo.lockDefault(organisationId);
            if (!(await repo.find(organisationId, id))) return undefined;
            await repo.clearDefault(organisationId, id);
          }
          return repo.update(organisationId, id, body);
        });
        return toInvoiceTemplate(orNotFound(row, 'Invoice template'));
      } catch (error) {
        return conflicts(error);
      }
    },

    /** Deleting the default leaves the organisation without one: its PDFs go back to the plain layout. */
    async delete(organisationId: string, id: string): Promise<{ id: string; deleted: true }> {
      if (!(await repository.delete(organisationId, id))) throw AppError.notFound('Invoice template');
      return { id, deleted: true };
    },

    /** A PNG or JPEG of at most LOGO_MAX_BYTES, stored as a PNG; it replaces the previous logo. */
    async setLogo(organisationId: string, id: string, file: UploadedLogo | undefined): Promise<InvoiceTemplate> {
      await requireTemplate(organisationId, id);
      const logo = checkedLogo(file);
      return toInvoiceTemplate(orNotFound(await repository.setLogo(organisationId, id, logo), 'Invoice template'));
    },

    async logo(organisationId: string, id: string): Promise<InvoiceTemplateLogo> {
      await requireTemplate(organisationId, id);
      return orNotFound(await repository.findLogo(organisationId, id), 'Invoice template logo');
    },

    /** The template without a logo, whether it had one or not. */
    async removeLogo(organisationId: string, id: string): Promise<InvoiceTemplate> {
      const row = await requireTemplate(organisationId, id);
      if (!row.logo_content_type) return toInvoiceTemplate(row);
      return toInvoiceTemplate(orNotFound(await repository.clearLogo(organisationId, id), 'Invoice template'));
    },
  };
}

export type InvoiceTemplateService = ReturnType<typeof createInvoiceTemplateService>;
