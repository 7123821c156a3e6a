/**
 * The gateway's one budget for uploads in flight (`max_upload_bytes_inflight`) and the edits'
 * files spooled to disk, over raw sockets on a fake ComfyUI: an upload that does not fit next
 * to the others is refused at once, before its body is read, with 503 + Retry-After (and the
 * budget comes back when the first one ends); one larger than the whole budget is a 413; a
 * chunked upload without a length is cut at the chunk that does not fit; the spool folder is
 * empty again after every edit, answered or refused; the real `openai` SDK's images.edit works
 * through it all; audio transcriptions share the budget, and a body refused halfway is drained
 * so that its keep-alive connection carries the next request.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import {
  bearer,
  call,
  maskPng,
  MASTER,
  pngA,
  spooledUploads,
  startMediaRig,
  uploadsOf,
  type MediaRig,
} from './helpers/media-gateway.ts';

const MIB = 1024 * 1024;
const BUDGET = 8 * MIB;
const BOUNDARY = 'budget-test-boundary';

/** A multipart edit body around one `image` part of `image` bytes. */
function editBody(image: Buffer): { head: Buffer; tail: Buffer } {
  const head = Buffer.from(
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
  );
  return { head: Buffer.concat([head, image]), tail: Buffer.from(`\r\n--${BOUNDARY}--\r\n`) };
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: { error?: { code?: string; param?: string | null } };
}

/** Starts an edit upload by hand; `length` undefined sends it chunked. Resolves `answer` when the gateway answers. */
function startUpload(url: string, length: number | undefined): { req: ClientRequest; answer: Promise<Answer> } {
  const headers: Record<string, string> = {
    ...bearer(MASTER),
    'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
  };
  if (length !== undefined) headers['content-length'] = String(length);
  else headers['transfer-encoding'] = 'chunked';
  const req = request(`${url}/v1/images/edits`, { method: 'POST', headers });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: JSON.parse(Buffer.concat(chunks).toString() || '{}'),
        }),
      );
    });
    req.on('error', reject);
  });
  return { req, answer };
}

describe('the upload budget and the spooled edits', () => {
  let rig: MediaRig;
  const spooled = () => spooledUploads(rig);

  before(async () => {
    rig = await startMediaRig({ overrides: { max_upload_bytes_inflight: BUDGET } });
  });
  after(async () => rig?.close());

  test('an upload that does not fit beside one in flight: 503 + Retry-After at once; it comes back', async () => {
    const first = editBody(Buffer.concat([pngA, Buffer.alloc(6 * MIB, 1)]));
    const held = startUpload(rig.url, first.head.length + first.tail.length);
    held.req.write(first.head.subarray(0, MIB)); // a slow client: most of its body is still to come
    await waitFor(() => spooled().length === 1, 'the first upload is being spooled');

    const second = editBody(Buffer.concat([pngA, Buffer.alloc(3 * MIB, 2)]));
    const refused = startUpload(rig.url, second.head.length + second.tail.length);
    refused.req.write(second.head.subarray(0, 1024)); // headers and a little: the answer comes before the rest
    const busy = await refused.answer;
    refused.req.destroy();
    assert.equal(busy.status, 503, JSON.stringify(busy.body));
    assert.equal(busy.body.error?.code, 'uploads_busy');
    assert.equal(busy.headers['retry-after'], '5');
    const rows = rig.gw.gateway.callLog.recent({ status: 503 });
    assert.ok(
      rows.some((r) => r.endpoint === '/v1/images/edits' && r.backend === '(refused)'),
      'logged as a refusal',
    );

    held.req.end(Buffer.concat([first.head.subarray(MIB), first.tail]));
    const done = await held.answer;
    assert.equal(done.status, 200, JSON.stringify(done.body)); // a PNG with a tail: it ran
    await waitFor(() => spooled().length === 0, 'the spool folder is removed');

    const again = startUpload(rig.url, second.head.length + second.tail.length);
    again.req.end(Buffer.concat([second.head, second.tail]));
    assert.equal((await again.answer).status, 200, 'the budget came back: no 503 this time');
  });

  test('an upload larger than the whole budget is a 413; a chunked one is cut at the chunk past it', async () => {
    const huge = startUpload(rig.url, BUDGET + 1);
    huge.req.write(Buffer.alloc(1024));
    const tooLarge = await huge.answer;
    huge.req.destroy();
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.body.error?.code, 'request_too_large');

    const body = editBody(Buffer.concat([pngA, Buffer.alloc(BUDGET, 3)]));
    const chunked = startUpload(rig.url, undefined);
    chunked.req.end(Buffer.concat([body.head, body.tail]));
    const cut = await chunked.answer;
    assert.equal(cut.status, 503, JSON.stringify(cut.body));
    assert.equal(cut.body.error?.code, 'uploads_busy');
    await waitFor(() => spooled().length === 0, 'nothing left spooled');

    // a JSON body without a length is metered as it is parsed
    const json = request(`${rig.url}/v1/generations`, {
      method: 'POST',
      headers: { ...bearer(MASTER), 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    const jsonAnswer = new Promise<number>((resolve, reject) => {
      json.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      json.on('error', reject);
    });
    json.end(JSON.stringify({ model: 'wan', images: { image: Buffer.alloc(BUDGET).toString('base64') } }));
    assert.equal(await jsonAnswer, 503);
  });

  test('images.edit through the spool: image and mask reach the box as sent, the spool is empty after', async () => {
    const client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: MASTER, maxRetries: 0 });
    const res = await client.images.edit({
      model: 'inpaint',
      prompt: 'p',
      image: await toFile(pngA, 'a.png', { type: 'image/png' }),
      mask: await toFile(maskPng, 'mask.png', { type: 'image/png' }),
    });
    assert.ok(res.data?.[0]?.b64_json);
    assert.ok(uploadsOf(rig.edit, pngA).length > 0, 'the image reached the box whole');
    assert.ok(uploadsOf(rig.edit, maskPng).length > 0, 'so did the mask');
    assert.deepEqual(spooled(), []);
    const jobs = await call<{ data: { id: string }[] }>(rig.url, 'GET', '/v1/jobs?limit=1', MASTER);
    assert.equal(jobs.status, 200);
    const jobFiles = readdirSync(join(rig.gw.gateway.config().jobs_dir, jobs.body.data[0].id));
    assert.ok(
      jobFiles.some((f) => f.startsWith('in-')),
      'the job keeps its inputs itself',
    );
  });
});

describe('the upload budget on audio transcriptions', () => {
  let whisper: FakeBackend;
  let gw: TestGateway;

  before(async () => {
    whisper = await startFake('vllm', { models: ['openai/whisper-large-v3'] });
    gw = await startGateway([{ name: 'local', url: whisper.url }], { max_upload_bytes_inflight: MIB });
  });
  after(async () => {
    await gw?.close();
    await whisper?.close();
  });

  const form = (size: number) => {
    const body = Buffer.concat([
      Buffer.from(
        [
          `--${BOUNDARY}`,
          'content-disposition: form-data; name="model"',
          '',
          'openai/whisper-large-v3',
          `--${BOUNDARY}`,
          'content-disposition: form-data; name="file"; filename="a.wav"',
          'content-type: audio/wav',
          '',
          '',
        ].join('\r\n'),
      ),
      Buffer.alloc(size, 5),
      Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
    ]);
    return body;
  };
  const post = (body: Buffer, chunked: boolean) =>
    new Promise<{ status: number; code?: string }>((resolve, reject) => {
      const headers: Record<string, string> = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
      if (chunked) headers['transfer-encoding'] = 'chunked';
      else headers['content-length'] = String(body.length);
      const req = request(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers });
      req.setTimeout(5_000, () => req.destroy(new Error('no answer within 5 s')));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({
            status: res.statusCode ?? 0,
            code: text.startsWith('{') ? JSON.parse(text).error?.code : undefined,
          });
        });
      });
      req.on('error', reject);
      req.end(body);
    });

  test('a transcription over the budget: 413; a chunked one past it: 503; one that fits is answered', async () => {
    const whole = await post(form(2 * MIB), false);

    assert.equal(whole.status, 413);
    assert.equal(whole.code, 'request_too_large');
    const chunked = await post(form(2 * MIB), true);

    assert.equal(chunked.status, 503);
    assert.equal(chunked.code, 'uploads_busy');
    // the same keep-alive connection carries the next request: the refused body was drained
    const small = await post(form(64 * 1024), true);
    assert.equal(small.status, 200);
  });
});
