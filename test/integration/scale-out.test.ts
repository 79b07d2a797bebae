import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { CreateBucketCommand, HeadObjectCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { loadConfig } from '../../src/config';
import { storagesFrom } from '../../src/storage/storage-from-config';
import { S3_MIN_PART_BYTES } from '../../src/storage/s3-storage';
import { freePort } from '../../src/temporal/dev-server';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { createCustomerEntity } from './support/fixtures';
import { spawnWorker, waitForWorker } from './support/worker-process';

// Two API processes and a worker of their own share nothing but Postgres, Temporal and a bucket (moto's S3).
const taskQueue = `billing-scale-out-${randomUUID()}`;
const bucket = 'billing-scale-out';
let moto: ChildProcess;
let s3: S3Client;
let env: Record<string, string>;
let worker: ChildProcess;
let one: TestApi;
let two: TestApi;
let tenant: Tenant;

async function startMoto(): Promise<string> {
  const port = await freePort();
  moto = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${port}`;
  s3 = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (moto.exitCode !== null) throw new Error(`moto_server exited with code ${moto.exitCode}`);
    try {
      await s3.send(new ListBucketsCommand({}));
      return endpoint;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

beforeAll(async () => {
  const endpoint = await startMoto();
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  env = {
    TEMPORAL_TASK_QUEUE: taskQueue,
    RATE_LIMIT_STORE: 'postgres',
    LOGIN_MAX_FAILURES: '5',
    STORAGE_DRIVER: 's3',
    S3_BUCKET: bucket,
    S3_ENDPOINT: endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    S3_ACCESS_KEY_ID: 'test',
    S3_SECRET_ACCESS_KEY: 'test',
  };
  worker = spawnWorker(env, path.join(process.env.TEST_WORK_DIR!, `${taskQueue}.log`));
  [one, two] = await Promise.all([startTestApi(env), startTestApi(env)]);
  tenant = await createTenant(one, 'scale-out');
  await waitForWorker(process.env.TEMPORAL_ADDRESS!, taskQueue, worker, 180_000);
});
afterAll(async () => {
  if (worker?.exitCode === null) worker.kill('SIGKILL');
  await Promise.all([one?.close(), two?.close()]);
  s3?.destroy();
  moto?.kill('SIGKILL');
});

const system = () => bearer(tenant.systemToken);
/** Collects a response (or any stream) as bytes; also a supertest parser. */
const binary = (response: Pick<NodeJS.EventEmitter, 'on'>, done: (error: Error | null, body: Buffer) => void) => {
  const chunks: Buffer[] = [];
  response.on('data', (chunk: Buffer) => chunks.push(chunk));
  response.on('end', () => done(null, Buffer.concat(chunks)));
};
const inBucket = async (key: string) =>
  s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
    () => true,
    (error: { $metadata?: { httpStatusCode?: number } }) => {
      if (error.$metadata?.httpStatusCode === 404) return false;
      throw error;
    },
  );

it('when failed logins are spread over both APIs, then the limit counts them together and both answer 429', async () => {
  const login = (api: TestApi, attempt: number) => api.http().post('/auth/login').send({ email: tenant.adminEmail, password: `wrong-${attempt}` });
  const statuses: number[] = [];
  for (let attempt = 0; attempt < 5; attempt += 1) statuses.push((await login(attempt % 2 === 0 ? one : two, attempt)).status);
  // Three reached the first API and two the second: neither alone is at the limit of five.
  expect(statuses).toEqual([401, 401, 401, 401, 401]);

  const blockedOnOne = await login(one, 5);
  const blockedOnTwo = await login(two, 6);
  expect([blockedOnOne.status, blockedOnTwo.status]).toEqual([429, 429]);
  expect(blockedOnTwo.body).toMatchObject({ status: 'error', errors: [{ code: 1004 }] });
  expect(Number(blockedOnTwo.headers['retry-after'])).toBeGreaterThan(0);

  // The counter is per address and identifier: another account still logs in.
  const other = await createTenant(two, 'scale-out-other');
  await one.http().post('/auth/login').send({ email: other.adminEmail, password: other.adminPassword }).expect(200);
});

it('when a file is uploaded through one API, then the other serves the same bytes under the same UTF-8 name, from the bucket', async () => {
  const fixture = await createBillingFixture(one, tenant);
  const invoice = (await one.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId)).expect(201)).body.data;
  const content = randomBytes(300_000);
  const filename = 'Bestellung-Übersicht-請求書 €.pdf';
  const uploaded = await one.http().post(`/invoices/${invoice.id}/files`).set(system()).attach('file', content, { filename, contentType: 'application/pdf' });
  expect(uploaded.status).toBe(201);
  expect(uploaded.body.data).toMatchObject({ filename, size: content.length });
  const fileId = uploaded.body.data.id as string;

  const downloaded = await two.http().get(`/invoices/${invoice.id}/files/${fileId}`).set(system()).buffer(true).parse(binary);
  expect(downloaded.status).toBe(200);
  expect(Buffer.compare(downloaded.body as Buffer, content)).toBe(0);
  const disposition = String(downloaded.headers['content-disposition']);
  expect(decodeURIComponent(/filename\*=UTF-8''([^;]+)/.exec(disposition)![1]!)).toBe(filename);

  expect(await inBucket(`invoice-files/${tenant.organisationId}/${invoice.id}/${fileId}`)).toBe(true);
  expect(fs.existsSync(path.join(process.env.DATA_DIR!, 'invoice-files', tenant.organisationId, invoice.id))).toBe(false);
});

it('when an export is started through one API, then the other downloads its CSV from the bucket, in several parts', async () => {
  const { entityId } = await createCustomerEntity(one, tenant);
  // About 8 MB of CSV: more than one part of a multipart upload.
  const rows = 60_000;
  await one.db.raw(
    `INSERT INTO usage_events (id, organisation_id, customer_entity_id, metric, value, "timestamp", event_id)
     SELECT 'evt_scale_' || lpad(n::text, 6, '0'), ?, ?, 'scaled', n, timestamp '2026-11-01' + n * interval '1 second', 'scale-' || n
     FROM generate_series(1, ?) AS n`,
    [tenant.organisationId, entityId, rows],
  );
  const started = await one.http().post('/objects/export').set(system()).send({ object: 'usage-events', filter: [{ field: 'metric', op: 'eq', value: 'scaled' }] });
  expect(started.status).toBe(201);
  const jobId = started.body.data.id as string;

  const deadline = Date.now() + 120_000;
  let job = started.body.data;
  while (job.status !== 'completed' && job.status !== 'failed' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    job = (await two.http().get(`/jobs/${jobId}`).set(system())).body.data;
  }
  expect(job).toMatchObject({ status: 'completed', result: { rows } });
  expect(job.result.bytes).toBeGreaterThan(S3_MIN_PART_BYTES);

  const file = await two.http().get(`/jobs/${jobId}/file`).set(system()).buffer(true).parse(binary);
  expect(file.status).toBe(200);
  expect(file.headers['content-type']).toMatch(/^text\/csv/);
  const csv = file.body as Buffer;
  expect(csv.length).toBe(job.result.bytes);
  expect(Number(file.headers['content-length'])).toBe(csv.length);
  const lines = csv.toString('utf8').trimEnd().split('\r\n');
  expect(lines).toHaveLength(rows + 1);
  expect(new Set(lines.slice(1).map((line) => line.split(',')[0])).size).toBe(rows);
  expect(lines[rows]).toMatch(new RegExp(`^evt_scale_0${rows},[^,]+,${entityId},scaled,${rows}\\.0+,`));

  const key = `exports/${tenant.organisationId}/${jobId}.csv`;
  expect(await inBucket(key)).toBe(true);
  await one.http().delete(`/jobs/${jobId}`).set(system()).expect(200);
  expect(await inBucket(key)).toBe(false);
  await two.http().get(`/jobs/${jobId}/file`).set(system()).expect(404);
});

it('when an upload is resumed by another process from its checkpoint, then the object holds each part once, the stray part left out', async () => {
  const config = loadConfig({ ...process.env, ...env });
  const [first, second] = [storagesFrom(config).exports, storagesFrom(config).exports];
  const key = `resume/${randomUUID()}.bin`;
  const head = randomBytes(S3_MIN_PART_BYTES);
  const upload = await first.startUpload(key, 'application/octet-stream');
  await upload.appendPart(head);
  const checkpoint = upload.checkpoint();
  expect(checkpoint).toMatchObject({ parts: 1, bytes: head.length });
  // Written after the checkpoint by an attempt that then died: the next attempt writes it again.
  await upload.appendPart(Buffer.from('lost part'));

  const resumed = await second.resumeUpload(key, checkpoint);
  expect(resumed).toBeDefined();
  await resumed!.appendPart(Buffer.from('tail'));
  await resumed!.complete();
  const stored = await second.open(key);
  expect(stored?.size).toBe(head.length + 4);
  const bytes = await new Promise<Buffer>((resolve, reject) => binary(stored!.content.on('error', reject), (_error, body) => resolve(body)));
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(createHash('sha256').update(Buffer.concat([head, Buffer.from('tail')])).digest('hex'));

  const abandonedKey = `resume/${randomUUID()}.bin`;
  const abandoned = await first.startUpload(abandonedKey, 'application/octet-stream');
  await abandoned.appendPart(Buffer.from('x'));
  const gone = abandoned.checkpoint();
  await abandoned.abort();
  expect(await second.resumeUpload(abandonedKey, gone)).toBeUndefined();
  expect(await second.open(abandonedKey)).toBeUndefined();
});
