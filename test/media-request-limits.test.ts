/**
 * The media routes' and service's edges, over sockets against the fake ComfyUI: a file key is
 * accepted only for an input that loads a file, and checked before anything is fetched; all
 * client files of a request share one byte budget; `n` is capped; an upload's type is sniffed;
 * a job the scheduler could not place is a 503 to the Images API; a failure the service logged
 * itself is not logged again as a refusal; a thumbnail's bad size names `w`; a job whose start
 * or end bookkeeping throws still ends for everyone following it.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { GatewayError } from '../src/errors.ts';
import type { GenerationSubmit, JobView } from '../src/media/service-types.ts';
import {
  bearer,
  call,
  imageModels,
  MASTER,
  pngA,
  readSse,
  startMediaRig,
  uploadsOf,
  type MediaRig,
} from './helpers/media-gateway.ts';
import { ADMIN, caller } from './helpers/media-service.ts';
import { waitFor } from './helpers/wait.ts';

/** Five LoadImage → SaveImage pairs: an alias with five file inputs. */
function fiveImages(): Record<string, { class_type: string; inputs: Record<string, unknown> }> {
  const w: Record<string, { class_type: string; inputs: Record<string, unknown> }> = {};
  for (let i = 1; i <= 5; i++) {
    w[String(i)] = { class_type: 'LoadImage', inputs: { image: 'example.png' } };
    w[String(10 + i)] = { class_type: 'SaveImage', inputs: { images: [String(i), 0], filename_prefix: `five_${i}` } };
  }
  return w;
}

describe('media requests: files, limits and refusals', () => {
  let rig: MediaRig;
  let files: Server;
  let filesUrl = '';
  const hits = new Map<string, number>();
  /** 52 MiB: under the per-file cap, five of them over the request's budget. */
  const big = Buffer.alloc(52 * 1024 * 1024, 7);

  before(async () => {
    rig = await startMediaRig({
      overrides: {
        media_park_timeout_s: 0.3,
        image_models: { ...imageModels(), five: [{ backend: 'comfy', workflow_json: fiveImages() as never }] },
      },
    });
    files = createServer((req, res) => {
      hits.set(req.url ?? '', (hits.get(req.url ?? '') ?? 0) + 1);
      res.on('error', () => {});
      if (req.url === '/a.png') res.writeHead(200, { 'content-type': 'image/png' }).end(pngA);
      else if (req.url?.startsWith('/big')) res.writeHead(200, { 'content-type': 'image/png' }).end(big);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    const address = files.address();
    filesUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(async () => {
    await rig?.close();
    files?.closeAllConnections();
    await new Promise((r) => files?.close(r));
  });

  const generate = (body: unknown) => call<JobView & { error?: any }>(rig.url, 'POST', '/v1/generations', MASTER, body);
  const submit = (request: Partial<GenerationSubmit>) =>
    rig.gw.gateway.media.submit(ADMIN, {
      alias: 'sd15',
      prompt: 'p',
      params: {},
      files: {},
      endpoint: '/v1/generations',
      requestId: `t-${Math.random()}`,
      ...request,
    });

  test('a file for an input that loads no file is refused naming it, before the URL is fetched', async () => {
    const before = rig.comfy.prompts.length;
    const r = await generate({ model: 'sd15', prompt: 'p', files: { prompt: `${filesUrl}/a.png` } });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.param, 'files.prompt');
    assert.match(r.body.error.message, /'prompt' is not a file input/);
    assert.equal(hits.get('/a.png') ?? 0, 0, 'nothing was fetched for a key the alias does not take');
    const seed = await generate({ model: 'sd15', prompt: 'p', images: { seed: `${filesUrl}/a.png` } });
    assert.equal(seed.status, 400);
    assert.equal(seed.body.error.param, 'images.seed');
    assert.equal(hits.get('/a.png') ?? 0, 0);
    // the service itself refuses it too (any caller of submit)
    const err = await submit({ files: { prompt: { bytes: pngA, mime: 'image/png' } } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.param, 'prompt');
    assert.match(err.message, /'prompt' is not a file input/);
    assert.equal(rig.comfy.prompts.length, before, 'nothing ran');
  });

  test('all client files of a request share one budget: ref_images, and images + files together', async () => {
    const refs = Array.from({ length: 5 }, (_, i) => `${filesUrl}/big?ref=${i}`);
    const r = await call(rig.url, 'POST', '/v1/images/generations', MASTER, {
      model: 'sd15',
      prompt: 'p',
      ref_images: refs,
    });
    assert.equal(r.status, 413, JSON.stringify(r.body).slice(0, 300));
    assert.equal(r.body.error.code, 'files_too_large');
    const n = await generate({
      model: 'five',
      prompt: 'p',
      images: { image: `${filesUrl}/big?i=1`, image_2: `${filesUrl}/big?i=2`, image_3: `${filesUrl}/big?i=3` },
      files: { image_4: `${filesUrl}/big?i=4`, image_5: `${filesUrl}/big?i=5` },
    });
    assert.equal(n.status, 413, JSON.stringify(n.body).slice(0, 300));
    assert.equal(n.body.error.code, 'files_too_large');
  });

  test('`n` above 10 is refused', async () => {
    const r = await call(rig.url, 'POST', '/v1/images/generations', MASTER, { model: 'sd15', prompt: 'p', n: 11 });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.param, 'n');
  });

  test("an edit's upload is typed by its bytes, not by the type the client declared", async () => {
    const form = new FormData();
    form.append('model', 'inpaint');
    form.append('prompt', 'p');
    form.append('image', new Blob([new Uint8Array(pngA)], { type: 'image/jpeg' }), 'photo.jpg');
    const res = await fetch(`${rig.url}/v1/images/edits`, { method: 'POST', headers: bearer(MASTER), body: form });
    assert.equal(res.status, 200, await res.text());
    const [job] = (await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs?limit=1', MASTER)).body.data;
    assert.equal(job.inputs[0].mime, 'image/png');
    assert.ok(uploadsOf(rig.edit, pngA).includes(`gw_${job.id}_image.png`), uploadsOf(rig.edit, pngA).join(', '));
  });

  test('a job the scheduler could not place is a 503 with Retry-After to the Images API (the native sync answer keeps the view)', async (t) => {
    rig.comfy.setKnobs({ stepMs: 300, steps: 10 });
    const busy = await generate({ model: 'sd15', prompt: 'busy', mode: 'async' });
    t.after(async () => {
      await rig.gw.gateway.media.cancel(busy.body.id, ADMIN);
      rig.comfy.setKnobs({ stepMs: 20, steps: 4 });
    });
    await waitFor(() => rig.comfy.prompts.some((p) => p.status === 'running'), 'the box is busy');
    const r = await call(rig.url, 'POST', '/v1/images/generations', MASTER, { model: 'sd15', prompt: 'waits' });
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'park_timeout');
    assert.equal(r.headers.get('retry-after'), '5');
    assert.equal(r.headers.get('x-should-retry'), 'true');
    const native = await generate({ model: 'sd15', prompt: 'waits too' });
    assert.equal(native.status, 200);
    assert.equal(native.body.status, 'failed');
    assert.equal(native.body.error?.code, 'park_timeout');
  });

  test("a job input the gateway cannot keep: a 500, logged once (the job's row), not again as a refusal", async (t) => {
    const artifacts = rig.gw.gateway.media.artifacts;
    const original = artifacts.writeInput;
    artifacts.writeInput = async () => {
      throw new Error('disk full');
    };
    t.after(() => {
      artifacts.writeInput = original;
    });
    const r = await generate({ model: 'wan', prompt: 'p', images: { image: pngA.toString('base64') } });
    assert.equal(r.status, 500, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'input_write_failed');
    await waitFor(
      () => rig.gw.gateway.callLog.recent({}).some((row) => row.reason === 'input_write_failed'),
      'the job is logged',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const rows = rig.gw.gateway.callLog.recent({}).filter((row) => row.reason === 'input_write_failed');
    assert.equal(rows.length, 1, JSON.stringify(rows));
  });

  test('a thumbnail with a bad size names `w`', async () => {
    const done = await generate({ model: 'sd15', prompt: 'thumb' });
    assert.equal(done.body.status, 'done');
    const err = await rig.gw.gateway.media.result(done.body.id, 0, ADMIN, { format: 'webp', w: 0 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.param, 'w');
    const h = await rig.gw.gateway.media.result(done.body.id, 0, ADMIN, { format: 'webp', h: 99_999 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.equal((h as GatewayError).param, 'h');
  });

  test('a job whose start fails after it was filed ends failed, its live state gone', async (t) => {
    const store = rig.gw.gateway.media.store;
    const original = store.update.bind(store);
    let thrown = false;
    store.update = ((id, patch, now) => {
      if (!thrown && patch.summary && patch.status === undefined) {
        thrown = true;
        throw new Error('database is locked');
      }
      return original(id, patch, now);
    }) as typeof store.update;
    t.after(() => {
      store.update = original;
    });
    const err = await submit({ params: { seed: 7 } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.status, 500);
    assert.equal(rig.gw.gateway.media.running, 0, 'no live entry left behind');
    const [job] = rig.gw.gateway.media.list(ADMIN, { limit: 1 });
    assert.equal(job.status, 'failed');
  });

  test('a job whose call-log row cannot be written still ends for its event stream', async (t) => {
    const gateway = rig.gw.gateway;
    const original = gateway.recordOutcome;
    gateway.recordOutcome = () => {
      throw new Error('call log closed');
    };
    t.after(() => {
      gateway.recordOutcome = original;
    });
    rig.comfy.setKnobs({ stepMs: 40, steps: 6 });
    t.after(() => rig.comfy.setKnobs({ stepMs: 20, steps: 4 }));
    const job = await rig.gw.gateway.media.submit(caller('user:9'), {
      alias: 'sd15',
      prompt: 'p',
      params: {},
      files: {},
      endpoint: '/v1/generations',
      requestId: 'rec',
    });
    const events = await fetch(`${rig.url}/v1/jobs/${job.id}/events`, { headers: bearer(MASTER) });
    const { events: seen, ended } = await readSse(events, 4000);
    assert.ok(ended, 'the stream ended');
    assert.equal(seen.at(-1)?.type, 'done');
    assert.equal(rig.gw.gateway.media.running, 0);
    assert.equal((await rig.gw.gateway.media.settled(job.id)).status, 'done');
  });
});
