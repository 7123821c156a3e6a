/**
 * Quotas hold for media jobs: each job is admitted against its user's `quota_req_day` when it
 * is submitted (counted as running until its row is on record), so concurrent submits cannot
 * all slip past a limit; a job cancelled before it reached a box gives its count back, one
 * refused before any job existed never took one. Over sockets, the Images API through the
 * real `openai` SDK, on fake ComfyUI boxes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIError, toFile } from 'openai';
import type { JobView } from '../src/media/service-types.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import {
  call,
  createUser,
  isTerminal,
  MASTER,
  pngA,
  pollJob,
  startMediaRig,
  type MediaRig,
} from './helpers/media-gateway.ts';
import { FAST_COMFY, sd15Models } from './helpers/media-service.ts';

const errorCode = (body: unknown): string | undefined =>
  (body as { error?: { code?: string } } | undefined)?.error?.code;

describe('media quotas', () => {
  let rig: MediaRig;

  before(async () => {
    rig = await startMediaRig();
  });
  after(async () => rig?.close());

  const slow = () => rig.comfy.setKnobs({ stepMs: 100, steps: 100 });
  const fast = () => rig.comfy.setKnobs({ stepMs: 20, steps: 4 });
  const submit = (key: string, prompt: string) =>
    call<JobView>(rig.url, 'POST', '/v1/generations', key, { model: 'sd15', prompt, mode: 'async' });

  test('quota 3: of 10 concurrent async jobs and 10 images.generate, 3 are accepted, 17 refused 429', async () => {
    const key = await createUser(rig.url, 'quota-three', { quota_req_day: 3 });
    const client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: key, maxRetries: 0 });
    const asyncJobs = Array.from({ length: 10 }, (_, i) =>
      call(rig.url, 'POST', '/v1/generations', key, { model: 'sd15', prompt: `async ${i}`, mode: 'async' }).then(
        (r) => ({ status: r.status, code: errorCode(r.body), id: (r.body as JobView).id }),
      ),
    );
    const images = Array.from({ length: 10 }, (_, i) =>
      client.images
        .generate({ model: 'sd15', prompt: `sync ${i}` })
        .then(() => ({ status: 200, code: undefined as string | undefined, id: undefined }))
        .catch((err: unknown) => {
          assert.ok(err instanceof APIError, String(err));
          return { status: err.status ?? 0, code: errorCode({ error: err.error }), id: undefined };
        }),
    );
    const answers = await Promise.all([...asyncJobs, ...images]);
    const accepted = answers.filter((a) => a.status === 200 || a.status === 202);
    const refused = answers.filter((a) => a.status === 429);
    assert.equal(accepted.length, 3, JSON.stringify(answers));
    assert.equal(refused.length, 17, JSON.stringify(answers));
    assert.ok(
      refused.every((a) => a.code === 'insufficient_quota'),
      JSON.stringify(refused),
    );
    for (const a of accepted) if (a.id) await pollJob(rig.url, a.id, key, isTerminal);
    // the three ran and are on record: the next one is refused as well
    const later = await submit(key, 'later');
    assert.equal(later.status, 429);
  });

  test('a job cancelled while it waited for a box gives its count back; a refused one never took one', async (t) => {
    slow();
    t.after(fast);
    const busy = await submit(MASTER, 'hogging the box');
    t.after(async () => {
      await call(rig.url, 'POST', `/v1/jobs/${busy.body.id}/cancel`, MASTER);
    });
    await pollJob(rig.url, busy.body.id, MASTER, (v) => v.status === 'running');

    const key = await createUser(rig.url, 'quota-one', { quota_req_day: 1 });
    const bad = await call(rig.url, 'POST', '/v1/generations', key, { model: 'sd15', params: { no_such_param: 1 } });
    assert.equal(bad.status, 400, 'refused before any job existed');
    const parked = await submit(key, 'waiting');
    assert.equal(parked.status, 202, JSON.stringify(parked.body));
    await pollJob(rig.url, parked.body.id, key, (v) => v.queue_position !== null);
    const second = await submit(key, 'one too many');
    assert.equal(second.status, 429, 'the parked job holds the one request of the day');

    const cancelled = await call<JobView>(rig.url, 'POST', `/v1/jobs/${parked.body.id}/cancel`, key);
    assert.equal(cancelled.body.status, 'cancelled');
    const again = await submit(key, 'after the cancel');
    assert.equal(again.status, 202, `the cancelled job gave its count back: ${JSON.stringify(again.body)}`);
    await call(rig.url, 'POST', `/v1/jobs/${again.body.id}/cancel`, key);
  });

  test('a job cancelled while it ran on a box still counts: it used the GPU', async (t) => {
    slow();
    t.after(fast);
    const key = await createUser(rig.url, 'quota-one-running', { quota_req_day: 1 });
    const running = await submit(key, 'runs a while');
    assert.equal(running.status, 202, JSON.stringify(running.body));
    await pollJob(rig.url, running.body.id, key, (v) => v.status === 'running');
    const cancelled = await call<JobView>(rig.url, 'POST', `/v1/jobs/${running.body.id}/cancel`, key);
    assert.equal(cancelled.body.status, 'cancelled');
    await pollJob(rig.url, running.body.id, key, isTerminal);
    const next = await submit(key, 'one more');
    assert.equal(next.status, 429, JSON.stringify(next.body));
  });

  test('quota 3, 30 mixed requests at once (async, generate n=3, edit n=2, invalid ones): 3 run', async () => {
    const key = await createUser(rig.url, 'quota-three-mixed', { quota_req_day: 3 });
    const client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: key, maxRetries: 0 });
    type Outcome = { kind: string; status: number; id?: string };
    const settle = (kind: string, p: Promise<unknown>): Promise<Outcome> =>
      p.then(
        (r) => ({ kind, status: (r as { status?: number }).status ?? 200, id: (r as { body?: JobView }).body?.id }),
        (e: unknown) => ({ kind, status: e instanceof APIError ? (e.status ?? 0) : -1 }),
      );
    const image = () => toFile(pngA, 'a.png', { type: 'image/png' });
    // refused by validation first, all at once: none of them keeps a count
    const invalid = await Promise.all([
      ...[0, 1, 2].map(() =>
        settle(
          'size',
          client.images.generate({
            model: 'sd15',
            prompt: 'p',
            size: '0x512' as never,
          }),
        ),
      ),
      ...[0, 1, 2].map(async () =>
        settle(
          'file',
          client.images.edit({
            model: 'inpaint',
            prompt: 'p',
            image: await toFile(Buffer.from('<html>'), 'a.png', { type: 'image/png' }),
          }),
        ),
      ),
      ...[0, 1, 2].map(() =>
        settle(
          'width',
          call(rig.url, 'POST', '/v1/generations', key, {
            model: 'sd15',
            mode: 'async',
            params: { width: -5 },
          }),
        ),
      ),
    ]);
    assert.ok(
      invalid.every((o) => o.status === 400),
      JSON.stringify(invalid),
    );
    const mixed = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) =>
        settle(
          'async',
          call(rig.url, 'POST', '/v1/generations', key, {
            model: 'sd15',
            prompt: `a${i}`,
            mode: 'async',
            params: { batch: 2 },
          }),
        ),
      ),
      ...Array.from({ length: 8 }, (_, i) =>
        settle(
          'generate',
          client.images.generate({
            model: 'sd15',
            prompt: `g${i}`,
            n: 3,
          }),
        ),
      ),
      ...Array.from({ length: 8 }, async (_, i) =>
        settle(
          'edit',
          client.images.edit({
            model: 'inpaint',
            prompt: `e${i}`,
            n: 2,
            image: await image(),
          }),
        ),
      ),
      ...Array.from({ length: 6 }, (_, i) =>
        settle(
          'bad',
          client.images.generate({
            model: 'sd15',
            prompt: `b${i}`,
            size: '-1x5' as never,
          }),
        ),
      ),
    ]);
    const admitted = mixed.filter((o) => o.status === 200 || o.status === 202);
    assert.equal(admitted.length, 3, JSON.stringify(mixed));
    assert.ok(
      mixed.every((o) => o.status === 200 || o.status === 202 || o.status === 429 || o.status === 400),
      JSON.stringify(mixed),
    );
    for (const o of admitted) if (o.id) await pollJob(rig.url, o.id, key, isTerminal);
    assert.equal((await submit(key, 'after')).status, 429);
  });
});

describe('media quotas across boxes', () => {
  let fakes: ComfyFake[] = [];
  let gw: TestGateway | undefined;
  after(async () => {
    await gw?.close();
    await Promise.all(fakes.map((f) => f.close()));
  });

  test('a job that fails over to the second box counts once', async () => {
    // the first box fails the workflow's sampler node: the job moves to the second, once
    fakes = await Promise.all([startComfyFake({ knobs: { failNode: '310' } }), startComfyFake()]);
    const names = ['comfy-0', 'comfy-1'];
    gw = await startGateway(
      fakes.map((f, i) => ({ name: names[i], url: f.url, type: 'comfyui' as const, ...FAST_COMFY })),
      { api_key: MASTER, image_models: sd15Models(names) },
    );
    const key = await createUser(gw.url, 'quota-two-failover', { quota_req_day: 2 });
    const post = (prompt: string) =>
      call<JobView>(gw!.url, 'POST', '/v1/generations', key, { model: 'sd15', prompt, mode: 'async' });
    const first = await post('moves');
    assert.equal(first.status, 202, JSON.stringify(first.body));
    const done = await pollJob(gw.url, first.body.id, key, isTerminal);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    assert.equal(fakes[0].prompts.length + fakes[1].prompts.length, 2, 'it ran on both boxes');
    const second = await post('two');
    assert.equal(second.status, 202, `the failover counted once: ${JSON.stringify(second.body)}`);
    await pollJob(gw.url, second.body.id, key, isTerminal);
    const third = await post('three');
    assert.equal(third.status, 429);
  });
});

describe('media quotas across a restart', () => {
  test('a job parked when the gateway stops holds nothing after it starts again', async (t) => {
    const fake = await startComfyFake({ knobs: { stepMs: 200, steps: 100 } });
    const storeDir = mkdtempSync(join(tmpdir(), 'media-quota-restart-'));
    const spec = [{ name: 'comfy-0', url: fake.url, type: 'comfyui' as const, ...FAST_COMFY }];
    const cfg = { api_key: MASTER, image_models: sd15Models(['comfy-0']), media_park_timeout_s: 60 };
    let gw = await startGateway(spec, cfg, { storeDir });
    t.after(async () => {
      await gw.close();
      await fake.close();
      rmSync(storeDir, { recursive: true, force: true });
    });
    const key = await createUser(gw.url, 'quota-two-restart', { quota_req_day: 2 });
    const post = (who: string, prompt: string) =>
      call<JobView>(gw.url, 'POST', '/v1/generations', who, { model: 'sd15', prompt, mode: 'async' });
    const hog = await post(MASTER, 'hog');
    await pollJob(gw.url, hog.body.id, MASTER, (v) => v.status === 'running');
    const parked = await post(key, 'parked');
    assert.equal(parked.status, 202, JSON.stringify(parked.body));
    await pollJob(gw.url, parked.body.id, key, (v) => v.queue_position !== null);

    await gw.close();
    gw = await startGateway(spec, cfg, { storeDir });
    const after = await call<JobView>(gw.url, 'GET', `/v1/jobs/${parked.body.id}`, key);
    assert.equal(after.body.status, 'cancelled', 'the parked job ended with the process that held it');
    const answers = [];
    for (const prompt of ['one', 'two', 'three']) {
      answers.push((await post(key, prompt)).status);
    }
    assert.deepEqual(answers, [202, 202, 429], 'the parked job never ran: both counts of the day are there');
  });
});
