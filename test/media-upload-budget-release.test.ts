/**
 * The upload budget (`max_upload_bytes_inflight`) comes back on every path and counts what a
 * request really holds, over raw sockets on a fake ComfyUI: 50 edits aborted mid-upload (with
 * and without a Content-Length) leave the whole budget free and no spooled file behind; a
 * gzip body is counted by its decoded bytes, not by its small Content-Length (a 9 MiB JSON
 * that compresses to a few KiB is refused 503 with an 8 MiB budget, as the same body plain
 * would be); a URL still being fetched for a client that left takes nothing more (it could never
 * be given back); spools a crashed process left under `<jobs_dir>/uploads` are gone once it started.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { spoolDir } from '../src/media/inputs/upload-spool.ts';
import { startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import {
  bearer,
  createUser,
  MASTER,
  pngA,
  spooledUploads,
  startMediaRig,
  type MediaRig,
} from './helpers/media-gateway.ts';

const MIB = 1024 * 1024;
const BUDGET = 8 * MIB;
const BOUNDARY = 'release-test-boundary';

function editBody(image: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(
      [
        `--${BOUNDARY}`,
        'content-disposition: form-data; name="model"',
        '',
        'inpaint',
        `--${BOUNDARY}`,
        'content-disposition: form-data; name="prompt"',
        '',
        'p',
        `--${BOUNDARY}`,
        'content-disposition: form-data; name="image"; filename="a.png"',
        'content-type: image/png',
        '',
        '',
      ].join('\r\n'),
    ),
    image,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: { error?: { code?: string } };
}

function post(url: string, path: string, headers: Record<string, string>, body: Buffer, key = MASTER): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'POST', headers: { ...bearer(key), ...headers } });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        const parsed = text.startsWith('{') ? JSON.parse(text) : {};
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Sends the first `sent` bytes of a body declared (or chunked) at its full size, then drops the connection. */
async function abortedUpload(
  url: string,
  body: Buffer,
  sent: number,
  chunked: boolean,
  path = '/v1/images/edits',
  type = `multipart/form-data; boundary=${BOUNDARY}`,
  extra: Record<string, string> = {},
  key = MASTER,
): Promise<void> {
  const headers: Record<string, string> = { ...bearer(key), 'content-type': type, ...extra };
  if (chunked) headers['transfer-encoding'] = 'chunked';
  else headers['content-length'] = String(body.length);
  const req = request(`${url}${path}`, { method: 'POST', headers });
  req.on('error', () => {});
  await new Promise<void>((resolve) => req.write(body.subarray(0, sent), () => resolve()));
  await new Promise((r) => setTimeout(r, 20));
  req.destroy();
}

describe('the upload budget comes back and counts decoded bytes', () => {
  let rig: MediaRig;
  const spooled = () => spooledUploads(rig);

  before(async () => {
    rig = await startMediaRig({ overrides: { max_upload_bytes_inflight: BUDGET } });
  });
  after(async () => rig?.close());

  test('50 edits and 20 JSON bodies aborted mid-upload: nothing is left spooled, a 7 MiB edit fits 8 MiB', async () => {
    const big = editBody(Buffer.concat([pngA, Buffer.alloc(6 * MIB, 7)]));
    const aborts = [];
    for (let i = 0; i < 50; i++) aborts.push(abortedUpload(rig.url, big, 256 * 1024 + i * 1024, i % 2 === 1));
    // JSON bodies too, plain and gzipped, with and without a length
    const image = Buffer.alloc(6 * MIB, 9).toString('base64');
    const json = Buffer.from(JSON.stringify({ model: 'wan', images: { image } }));
    const packed = gzipSync(json);
    for (let i = 0; i < 10; i++) {
      aborts.push(abortedUpload(rig.url, json, 512 * 1024, i % 2 === 1, '/v1/generations', 'application/json'));
      aborts.push(
        abortedUpload(
          rig.url,
          packed,
          Math.floor(packed.length / 2),
          i % 2 === 1,
          '/v1/generations',
          'application/json',
          { 'content-encoding': 'gzip' },
        ),
      );
    }
    await Promise.all(aborts);
    await waitFor(() => spooled().length === 0, 'every aborted upload removed its spool', 10_000);

    const fits = editBody(Buffer.concat([pngA, Buffer.alloc(7 * MIB, 8)]));
    const res = await post(
      rig.url,
      '/v1/images/edits',
      {
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        'content-length': String(fits.length),
      },
      fits,
    );
    assert.equal(res.status, 200, `the budget is whole again: ${JSON.stringify(res.body)}`);
    assert.deepEqual(spooled(), []);
  });

  test('an edit aborted mid-upload gives its quota count back: with quota 1, ten aborted, then one runs', async () => {
    const key = await createUser(rig.url, 'aborting-uploads', { quota_req_day: 1 });
    const big = editBody(Buffer.concat([pngA, Buffer.alloc(2 * MIB, 7)]));
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        abortedUpload(rig.url, big, 128 * 1024, i % 2 === 1, undefined, undefined, {}, key),
      ),
    );
    await waitFor(() => spooled().length === 0, 'every aborted upload removed its spool', 10_000);
    const whole = editBody(pngA);
    const type = `multipart/form-data; boundary=${BOUNDARY}`;
    const res = await post(rig.url, '/v1/images/edits', { 'content-type': type }, whole, key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const next = await post(rig.url, '/v1/images/edits', { 'content-type': type }, whole, key);
    assert.equal(next.status, 429, "the one that ran is the day's one");
  });

  test('a client gone while its URL is fetched: the bytes that still arrive do not keep the budget', async (t) => {
    // a server that sends 6 MiB of text (not an image: the job is refused) once the client has left
    let clientLeft!: () => void;
    const left = new Promise<void>((resolve) => {
      clientLeft = resolve;
    });
    let sent!: () => void;
    const allSent = new Promise<void>((resolve) => {
      sent = resolve;
    });
    let asked!: () => void;
    const fetching = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const slow = createServer((_req, res) => {
      asked();
      res.writeHead(200, { 'content-type': 'text/plain' });
      void left.then(() => res.end(Buffer.alloc(6 * MIB, 0x61), () => sent()));
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => slow.close(() => resolve())));
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/picture.png`;

    const body = Buffer.from(JSON.stringify({ model: 'wan', prompt: 'p', images: { image: url } }));
    const headers = { ...bearer(MASTER), 'content-type': 'application/json', 'content-length': String(body.length) };
    const req = request(`${rig.url}/v1/generations`, { method: 'POST', headers });
    req.on('error', () => {});
    req.end(body);
    await fetching;
    req.destroy();
    await new Promise((r) => setTimeout(r, 100));
    clientLeft();
    await allSent;
    await new Promise((r) => setTimeout(r, 300)); // the gateway reads the rest and refuses the text

    const fits = editBody(Buffer.concat([pngA, Buffer.alloc(7 * MIB, 8)]));
    const type = `multipart/form-data; boundary=${BOUNDARY}`;
    const res = await post(rig.url, '/v1/images/edits', { 'content-type': type }, fits);
    assert.equal(res.status, 200, `the budget is whole again: ${JSON.stringify(res.body)}`);
  });

  test('spools a stopped process left behind are removed when the gateway starts', async () => {
    const stale = join(rig.gw.storeDir, 'stale-jobs');
    mkdirSync(join(spoolDir(stale), 'upload-left'), { recursive: true });
    writeFileSync(join(spoolDir(stale), 'upload-left', '0'), Buffer.alloc(1024));
    const again = await startGateway([], { api_key: MASTER, jobs_dir: stale });
    try {
      assert.deepEqual(
        readdirSync(stale).filter((f) => f === 'uploads'),
        [],
        'the spool folder is gone once started',
      );
    } finally {
      await again.close();
    }
  });

  test('a gzip body is counted by its decoded size: 9 MiB of JSON in a few KiB is a 503 like plain', async () => {
    const json = Buffer.from(JSON.stringify({ model: 'sd15', mode: 'async', prompt: 'a'.repeat(9 * MIB) }));
    const plainHeaders = { 'content-type': 'application/json', 'content-length': String(json.length) };
    const plain = await post(rig.url, '/v1/generations', plainHeaders, json);
    assert.equal(plain.status, 413, 'plain, its Content-Length alone is over the whole budget');
    const packed = gzipSync(json);
    assert.ok(packed.length < 64 * 1024, `compressed to ${packed.length} bytes`);
    const gz = await post(
      rig.url,
      '/v1/generations',
      {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': String(packed.length),
      },
      packed,
    );
    assert.equal(gz.status, 503, `decoded past the budget: ${JSON.stringify(gz.body).slice(0, 300)}`);
    assert.equal(gz.body.error?.code, 'uploads_busy');
    assert.equal(gz.headers['retry-after'], '5');

    // a small gzip body still passes, and the budget it took came back
    const small = Buffer.from(JSON.stringify({ model: 'sd15', mode: 'async', prompt: 'small' }));
    const ok = await post(
      rig.url,
      '/v1/generations',
      {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      gzipSync(small),
    );
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
  });
});
