import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { binary, pdfFile } from './support/read-back';

let api: TestApi;
let tenant: Tenant;
let admin: ReturnType<typeof bearer>;
let system: ReturnType<typeof bearer>;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'invoice-templates');
  admin = bearer(tenant.adminToken);
  system = bearer(tenant.systemToken);
});
afterAll(() => api.close());

const FORBIDDEN = { status: 'error', message: 'Forbidden', errors: [] };

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A real PNG: 8-bit RGB, a gradient of `width` × `height` pixels. */
function png(width: number, height: number): Buffer {
  const image = new PNG({ width, height });
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) image.data.set([(x * 255) / width, (y * 255) / height, 128, 255], 4 * (y * width + x));
  }
  return PNG.sync.write(image, { colorType: 2 });
}

/** A real JPEG of `width` × `height` pixels. */
function jpegOf(width: number, height: number): Buffer {
  return jpeg.encode({ data: PNG.sync.read(png(width, height)).data, width, height }, 90).data;
}

const create = (body: object, auth = admin) => api.http().post('/invoice-templates').set(auth).send(body);
const uploadLogo = (id: string, content: Buffer, filename = 'logo.png', auth = admin) =>
  api.http().put(`/invoice-templates/${id}/logo`).set(auth).attach('file', content, { filename, contentType: 'image/png' });

describe('templates', () => {
  it('when an Admin creates, reads, lists, changes and deletes a template, then each answer shows it as it is', async () => {
    const created = await create({ name: '  Standard  ', accentColor: '#1E40AF', footerText: 'Acme Ltd, 1 Market St, London' });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: expect.any(String),
      name: 'Standard',
      accentColor: '#1e40af',
      footerText: 'Acme Ltd, 1 Market St, London',
      legalText: null,
      isDefault: false,
      logo: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.data.id as string;

    const plain = await create({ name: 'Plain' }).expect(201);
    expect(plain.body.data).toMatchObject({ accentColor: '#1f2937', footerText: null, legalText: null, isDefault: false });

    expect((await api.http().get(`/invoice-templates/${id}`).set(admin).expect(200)).body.data).toEqual(created.body.data);
    const listed = await api.http().get('/invoice-templates').query({ search: 'stand' }).set(admin).expect(200);
    expect(listed.body.data).toMatchObject({ page: 1, limit: 20, total: 1 });
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toEqual([id]);
    expect((await api.http().get('/invoice-templates').query({ limit: 1 }).set(admin).expect(200)).body.data).toMatchObject({ limit: 1, total: 2 });

    const updated = await api.http().put(`/invoice-templates/${id}`).set(admin).send({ legalText: 'VAT reverse charge applies.', footerText: null }).expect(200);
    expect(updated.body.data).toMatchObject({ name: 'Standard', accentColor: '#1e40af', footerText: null, legalText: 'VAT reverse charge applies.' });

    const empty = await api.http().put(`/invoice-templates/${id}`).set(admin).send({});
    expect(empty.status).toBe(400);
    const badColour = await api.http().put(`/invoice-templates/${id}`).set(admin).send({ accentColor: 'blue' });
    expect(badColour.status).toBe(400);
    expect(badColour.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.accentColor' })]);
    const tooLong = await create({ name: 'Long', legalText: 'x'.repeat(2001) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors).toEqual([expect.objectContaining({ path: 'body.legalText' })]);

    const duplicate = await create({ name: 'Plain' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.errors).toEqual([{ code: 1003, message: 'An invoice template with this name exists' }]);
    const renamed = await api.http().put(`/invoice-templates/${id}`).set(admin).send({ name: 'Plain' });
    expect(renamed.status).toBe(409);

    const deleted = await api.http().delete(`/invoice-templates/${id}`).set(admin).expect(200);
    expect(deleted.body.data).toEqual({ id, deleted: true });
    await api.http().get(`/invoice-templates/${id}`).set(admin).expect(404);
    await api.http().delete(`/invoice-templates/${id}`).set(admin).expect(404);
    await api.http().put(`/invoice-templates/${id}`).set(admin).send({ name: 'Gone' }).expect(404);
    await api.http().delete(`/invoice-templates/${plain.body.data.id}`).set(admin).expect(200);
  });

  it("when another organisation's template is asked for, then 404", async () => {
    const other = await createTenant(api, 'invoice-templates-other');
    const created = await create({ name: 'Theirs' }, bearer(other.adminToken)).expect(201);
    const id = created.body.data.id as string;
    await api.http().get(`/invoice-templates/${id}`).set(admin).expect(404);
    await api.http().put(`/invoice-templates/${id}`).set(admin).send({ isDefault: true }).expect(404);
    await api.http().delete(`/invoice-templates/${id}`).set(admin).expect(404);
    await uploadLogo(id, png(4, 4)).expect(404);
  });

  it('when a SystemUser reads templates and their logo, then it may; every change answers the 403 envelope', async () => {
    const created = await create({ name: 'Read only' }).expect(201);
    const id = created.body.data.id as string;
    await uploadLogo(id, png(8, 8)).expect(200);

    expect((await api.http().get(`/invoice-templates/${id}`).set(system).expect(200)).body.data.name).toBe('Read only');
    const listed = await api.http().get('/invoice-templates').set(system).expect(200);
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toContain(id);
    await api.http().get(`/invoice-templates/${id}/logo`).set(system).expect(200);

    for (const [method, route, body] of [
      ['post', '/invoice-templates', { name: 'Mine' }],
      ['put', `/invoice-templates/${id}`, { footerText: 'Changed' }],
      ['delete', `/invoice-templates/${id}`, undefined],
      ['delete', `/invoice-templates/${id}/logo`, undefined],
    ] as const) {
      const res = await api.http()[method](route).set(system).send(body);
      expect([method, route, res.status, res.body]).toEqual([method, route, 403, FORBIDDEN]);
    }
    const upload = await uploadLogo(id, png(8, 8), 'logo.png', system);
    expect([upload.status, upload.body]).toEqual([403, FORBIDDEN]);

    const unchanged = await api.http().get(`/invoice-templates/${id}`).set(admin).expect(200);
    expect(unchanged.body.data).toMatchObject({ name: 'Read only', footerText: null, logo: { contentType: 'image/png' } });
    await api.http().delete(`/invoice-templates/${id}`).set(admin).expect(200);
  });
});

describe('logo', () => {
  it('when a PNG is uploaded, then it is stored as a PNG of the same pixels, which the template describes and which downloads, and it can be removed', async () => {
    const id = (await create({ name: 'With logo' }).expect(201)).body.data.id as string;
    await api.http().get(`/invoice-templates/${id}/logo`).set(admin).expect(404);
    const content = png(32, 16);
    const uploaded = await uploadLogo(id, content, 'anything.bin');
    expect(uploaded.status).toBe(200);

    const downloaded = await api.http().get(`/invoice-templates/${id}/logo`).set(admin).buffer(true).parse(binary);
    expect(downloaded.status).toBe(200);
    expect(downloaded.headers['content-type']).toBe('image/png');
    expect(downloaded.headers['content-disposition']).toContain('attachment');
    const stored = downloaded.body as Buffer;
    expect(uploaded.body.data.logo).toEqual({ contentType: 'image/png', size: stored.length, sha256: createHash('sha256').update(stored).digest('hex') });
    const [before, after] = [PNG.sync.read(content), PNG.sync.read(stored)];
    expect([after.width, after.height]).toEqual([32, 16]);
    expect(Buffer.compare(after.data, before.data)).toBe(0);

    const replaced = await uploadLogo(id, png(10, 10));
    expect(replaced.body.data.logo.sha256).not.toBe(uploaded.body.data.logo.sha256);
    // A JPEG is stored as a PNG of its pixels too.
    const fromJpeg = await uploadLogo(id, jpegOf(24, 12), 'logo.jpg');
    expect(fromJpeg.body.data.logo.contentType).toBe('image/png');
    const jpegStored = (await api.http().get(`/invoice-templates/${id}/logo`).set(admin).buffer(true).parse(binary)).body as Buffer;
    expect([PNG.sync.read(jpegStored).width, PNG.sync.read(jpegStored).height]).toEqual([24, 12]);

    const removed = await api.http().delete(`/invoice-templates/${id}/logo`).set(admin).expect(200);
    expect(removed.body.data).toMatchObject({ id, logo: null });
    await api.http().get(`/invoice-templates/${id}/logo`).set(admin).expect(404);
    // Removing a logo that is not there changes nothing.
    expect((await api.http().delete(`/invoice-templates/${id}/logo`).set(admin).expect(200)).body.data).toMatchObject({ id, logo: null });
  });

  it('when the file is not an image, a corrupt PNG, missing or too large, then it is refused and the template keeps no logo', async () => {
    const id = (await create({ name: 'Refusals' }).expect(201)).body.data.id as string;
    const good = png(16, 16);
    const badChecksum = Buffer.from(good);
    badChecksum.writeUInt8(badChecksum.readUInt8(30) ^ 0xff, 30); // the IHDR chunk's CRC
    const truncated = good.subarray(0, good.length - 20);
    const header = good.subarray(0, 33); // signature and IHDR
    const notDeflate = Buffer.concat([header, pngChunk('IDAT', Buffer.from('not compressed pixels')), pngChunk('IEND', Buffer.alloc(0))]);
    const shortPixels = Buffer.concat([header, pngChunk('IDAT', zlib.deflateSync(Buffer.alloc(10))), pngChunk('IEND', Buffer.alloc(0))]);
    // Corrupt files are refused with the decoder's own description of the fault, after this prefix.
    const invalidPng = expect.stringMatching(/^the logo is not a valid PNG: ./);
    const cases: Array<[string, Buffer, unknown]> = [
      ['text', Buffer.from('just some text, declared as image/png'), 'the logo must be a PNG or JPEG image'],
      ['pdf', Buffer.from('%PDF-1.4\n%âãÏÓ\n'), 'the logo must be a PNG or JPEG image'],
      ['bad checksum', badChecksum, invalidPng],
      ['truncated', truncated, invalidPng],
      ['not deflate', notDeflate, invalidPng],
      ['short pixels', shortPixels, invalidPng],
      ['too wide', png(1001, 1), 'the logo must be 1 to 1000 pixels on each side'],
      ['jpeg header only', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), expect.stringMatching(/^the logo (must be a PNG or JPEG image|is not a valid JPEG: .)/)],
      ['jpeg cut short', jpegOf(16, 16).subarray(0, 400), expect.stringMatching(/^the logo is not a valid JPEG: ./)],
    ];
    for (const [label, content, message] of cases) {
      const res = await uploadLogo(id, content);
      expect([label, res.status, res.body]).toEqual([label, 400, { status: 'error', message: 'Validation failed', errors: [{ code: 1001, path: 'body.file', message }] }]);
    }

    const noFile = await api.http().put(`/invoice-templates/${id}/logo`).set(admin).field('note', 'no file');
    expect(noFile.status).toBe(400);
    const json = await api.http().put(`/invoice-templates/${id}/logo`).set(admin).send({ file: 'x' });
    expect(json.status).toBe(415);
    expect(json.body.errors).toEqual([expect.objectContaining({ code: 1009, path: 'headers.content-type', message: 'The body must be sent as multipart/form-data' })]);
    const tooLarge = await uploadLogo(id, Buffer.concat([good, Buffer.alloc(512 * 1024)]));
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.errors[0]).toMatchObject({ code: 1005, path: 'body.file' });

    expect((await api.http().get(`/invoice-templates/${id}`).set(admin).expect(200)).body.data.logo).toBeNull();
  });
});

describe('default', () => {
  const defaults = async (organisation: Tenant = tenant) =>
    (await api.http().get('/invoice-templates').query({ limit: 100 }).set(bearer(organisation.adminToken)).expect(200)).body.data.items
      .filter((item: { isDefault: boolean }) => item.isDefault)
      .map((item: { name: string }) => item.name);

  it('when another template becomes the default, then the previous one stops being it', async () => {
    const organisation = await createTenant(api, 'invoice-templates-default');
    const auth = bearer(organisation.adminToken);
    const first = await create({ name: 'First', isDefault: true }, auth).expect(201);
    expect(first.body.data.isDefault).toBe(true);
    const second = await create({ name: 'Second', isDefault: true }, auth).expect(201);
    expect(await defaults(organisation)).toEqual(['Second']);
    expect((await api.http().get(`/invoice-templates/${first.body.data.id}`).set(auth).expect(200)).body.data.isDefault).toBe(false);

    await api.http().put(`/invoice-templates/${first.body.data.id}`).set(auth).send({ isDefault: true }).expect(200);
    expect(await defaults(organisation)).toEqual(['First']);
    // Making the default the default again changes nothing.
    await api.http().put(`/invoice-templates/${first.body.data.id}`).set(auth).send({ isDefault: true }).expect(200);
    expect(await defaults(organisation)).toEqual(['First']);
    await api.http().put(`/invoice-templates/${first.body.data.id}`).set(auth).send({ isDefault: false }).expect(200);
    expect(await defaults(organisation)).toEqual([]);

    // Many at once: the changes queue up, and exactly one template is the default at the end.
    const others = await Promise.all(['A', 'B', 'C', 'D', 'E'].map((name) => create({ name, isDefault: true }, auth)));
    expect(others.map((res) => res.status)).toEqual([201, 201, 201, 201, 201]);
    const racing = await Promise.all([first, second, ...others].map((res) => api.http().put(`/invoice-templates/${res.body.data.id}`).set(auth).send({ isDefault: true })));
    expect(racing.map((res) => res.status)).toEqual(racing.map(() => 200));
    expect(await defaults(organisation)).toHaveLength(1);
    expect(await api.db('invoice_templates').where({ organisation_id: organisation.organisationId, is_default: true }).count<{ count: string }[]>({ count: '*' })).toEqual([{ count: '1' }]);

    // Another organisation's default is its own.
    await create({ name: 'Elsewhere', isDefault: true }).expect(201);
    expect(await defaults(organisation)).toHaveLength(1);
  });
});

describe('invoice PDF', () => {
  let organisation: Tenant;
  let fixture: BillingFixture;

  beforeAll(async () => {
    organisation = await createTenant(api, 'invoice-templates-pdf');
    fixture = await createBillingFixture(api, organisation);
  });

  async function raisedInvoice(): Promise<string> {
    const auth = bearer(organisation.systemToken);
    const created = await api.http().post('/invoices').set(auth).send(invoiceBody(fixture.contractPlanId)).expect(201);
    await api.http().post(`/invoices/${created.body.data.id}/raise`).set(auth).expect(200);
    return created.body.data.id;
  }

  /** The invoice's PDF as pdftotext reads it, and the images pdfimages lists (width × height of each). */
  async function pdfOf(invoiceId: string): Promise<{ text: string; images: string[] }> {
    const res = await api.http().get(`/invoices/${invoiceId}/pdf`).set(bearer(organisation.systemToken)).buffer(true).parse(binary);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    const file = pdfFile(res.body as Buffer);
    const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
    // pdfimages -list: two header lines, then one line per image: page num type width height ...
    const list = execFileSync('pdfimages', ['-list', file], { encoding: 'utf8' }).trim().split('\n').slice(2);
    const images = list.map((line) => line.trim().split(/\s+/)).map((columns) => `${columns[2]} ${columns[3]}x${columns[4]}`);
    return { text, images };
  }

  it('when the organisation has no default template, then the PDF has the plain layout: no logo, no footer', async () => {
    await create({ name: 'Not the default', footerText: 'Should not show', legalText: 'Nor this' }, bearer(organisation.adminToken)).expect(201);
    const { text, images } = await pdfOf(await raisedInvoice());
    expect(images).toEqual([]);
    expect(text).toContain('Seller Ltd');
    expect(text).toContain('Platform fee');
    expect(text).not.toContain('Should not show');
    expect(text).not.toContain('Nor this');
  });

  it('when a default template has a footer, legal text and logo, then the PDF shows all three', async () => {
    const auth = bearer(organisation.adminToken);
    const footerText = 'Acme Widgets Ltd · Registered in England No. 01234567';
    const legalText = 'Payment within 30 days. Late payments bear interest at 8% over base rate.';
    const template = await create({ name: 'Branded', accentColor: '#b91c1c', footerText, legalText, isDefault: true }, auth).expect(201);
    const id = template.body.data.id as string;
    await uploadLogo(id, png(120, 48), 'logo.png', auth).expect(200);

    const invoiceId = await raisedInvoice();
    const { text, images } = await pdfOf(invoiceId);
    expect(text).toContain(footerText);
    expect(text).toContain(legalText);
    expect(text).toContain('Platform fee');
    expect(images).toEqual(['image 120x48']);

    // The same invoice without a default template: back to the plain layout.
    await api.http().put(`/invoice-templates/${id}`).set(auth).send({ isDefault: false }).expect(200);
    const plain = await pdfOf(invoiceId);
    expect(plain.images).toEqual([]);
    expect(plain.text).not.toContain(footerText);
    expect(plain.text).not.toContain(legalText);
  });
});
