/**
 * Media jobs over sockets: cancel (running: the prompt is interrupted; parked: it never
 * reaches the box), the event stream (queued position, keep-alive comments, the end), input
 * isolation (two concurrent edits on one single-slot box each get their own image), owner
 * gating (users, and client IPs while the gateway is open), files (results, thumbnails,
 * inputs, previews) and the 404s and 400s of malformed paths and queries.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import type { JobView } from '../src/media/service-types.ts';
import { waitFor } from './helpers/wait.ts';
import {
  bearer,
  call,
  createUser,
  isTerminal,
  MASTER,
  pngA,
  pngB,
  pollJob,
  readSse,
  startMediaRig,
  uploadsOf,
  type MediaRig,
} from './helpers/media-gateway.ts';

const UNKNOWN_ID = `job_${'0'.repeat(32)}`;

describe('media jobs', () => {
  let rig: MediaRig;

  before(async () => {
    rig = await startMediaRig({ overrides: { stream_keepalive_s: 0.1 } });
  });
  after(async () => rig?.close());

  const submit = async (body: Record<string, unknown>, key = MASTER): Promise<JobView> => {
    const r = await call<JobView>(rig.url, 'POST', '/v1/generations', key, body);
    assert.ok(r.status === 200 || r.status === 202, JSON.stringify(r.body));
    return r.body;
  };
  const slow = () => rig.comfy.setKnobs({ stepMs: 100, steps: 100 });
  const fast = () => rig.comfy.setKnobs({ stepMs: 20, steps: 4, previews: false });

  test('cancel a running job: its prompt is interrupted, the job ends cancelled, its event stream with it', async (t) => {
    slow();
    t.after(fast);
    const job = await submit({ model: 'sd15', prompt: 'long', mode: 'async' });
    await pollJob(rig.url, job.id, MASTER, (v) => v.status === 'running' && v.progress > 0);
    const stream = fetch(`${rig.url}/v1/jobs/${job.id}/events`, { headers: bearer(MASTER) }).then((res) =>
      readSse(res),
    );
    await new Promise((r) => setTimeout(r, 50));
    const interrupts = rig.comfy.interrupts();
    const cancelled = await call<JobView>(rig.url, 'POST', `/v1/jobs/${job.id}/cancel`, MASTER);
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.ok(rig.comfy.interrupts() > interrupts, 'ComfyUI was told to stop');
    await waitFor(() => rig.comfy.prompts.at(-1)!.status === 'interrupted', 'the prompt stopped on the box');
    const { events, ended } = await stream;
    assert.ok(ended);
    assert.equal(events[0].type, 'running');
    assert.equal(events.at(-1)!.type, 'cancelled');
    assert.equal((await pollJob(rig.url, job.id, MASTER, isTerminal)).status, 'cancelled');
    const again = await call<JobView>(rig.url, 'POST', `/v1/jobs/${job.id}/cancel`, MASTER);
    assert.equal(again.body.status, 'cancelled', 'cancelling twice is harmless');
  });

  test('cancel a parked job (the single-slot box is busy): it never reaches the box; its stream showed its place and kept alive', async (t) => {
    slow();
    t.after(fast);
    const busy = await submit({ model: 'sd15', prompt: 'hogging the box', mode: 'async' });
    t.after(async () => {
      await call(rig.url, 'POST', `/v1/jobs/${busy.id}/cancel`, MASTER);
    });
    await pollJob(rig.url, busy.id, MASTER, (v) => v.status === 'running');
    const parked = await submit({ model: 'sd15', prompt: 'waiting', mode: 'async' });
    const waiting = await pollJob(rig.url, parked.id, MASTER, (v) => v.queue_position !== null);
    assert.equal(waiting.status, 'queued');
    assert.equal(waiting.queue_position, 1);
    const prompts = rig.comfy.prompts.length;

    const stream = fetch(`${rig.url}/v1/jobs/${parked.id}/events`, { headers: bearer(MASTER) }).then((res) =>
      readSse(res),
    );
    await new Promise((r) => setTimeout(r, 400));
    const cancelled = await call<JobView>(rig.url, 'POST', `/v1/jobs/${parked.id}/cancel`, MASTER);
    assert.equal(cancelled.body.status, 'cancelled');
    const { frames, events } = await stream;
    assert.deepEqual(events[0], { type: 'queued', position: 1 });
    assert.equal(events.at(-1)!.type, 'cancelled');
    assert.ok(
      frames.some((f) => f.comment === 'keep-alive'),
      'a keep-alive comment while nothing happened',
    );
    assert.equal(rig.comfy.prompts.length, prompts, 'the parked job was never sent');
    assert.equal(
      (await call<JobView>(rig.url, 'GET', `/v1/jobs/${busy.id}`, MASTER)).body.status,
      'running',
      'the busy one runs on',
    );
  });

  test("a client that hangs up on a synchronous generation stops waiting, not the job: it finishes and stays the caller's", async (t) => {
    rig.comfy.setKnobs({ stepMs: 50, steps: 8 });
    t.after(fast);
    const controller = new AbortController();
    const answer = fetch(`${rig.url}/v1/images/generations`, {
      method: 'POST',
      signal: controller.signal,
      headers: { ...bearer(MASTER), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sd15', prompt: 'abandoned' }),
    }).catch((err: unknown) => err);
    let id = '';
    await waitFor(async () => {
      id = (await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs?status=running', MASTER)).body.data[0]?.id ?? '';
      return id !== '';
    }, 'the job runs');
    controller.abort();
    assert.equal(((await answer) as Error).name, 'AbortError');
    const done = await pollJob(rig.url, id, MASTER, isTerminal);
    assert.equal(done.status, 'done', 'the job went on');
    assert.equal((await fetch(`${rig.url}/v1/jobs/${id}/result/0`, { headers: bearer(MASTER) })).status, 200);
    assert.equal(rig.gw.gateway.callLog.recent({ status: 500 }).length, 0, 'no error on record for the hang-up');
  });

  test('two concurrent edits on one single-slot box: each gets its own image', async (t) => {
    rig.edit.setKnobs({ stepMs: 50 });
    t.after(() => rig.edit.setKnobs({ stepMs: 20 }));
    const client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: MASTER, maxRetries: 0 });
    const edit = async (png: Buffer, name: string) =>
      client.images.edit({
        model: 'inpaint',
        prompt: 'same prompt',
        response_format: 'b64_json',
        image: await toFile(png, name, { type: 'image/png' }),
      });
    const prompts = rig.edit.prompts.length;
    const [a, b] = await Promise.all([edit(pngA, 'a.png'), edit(pngB, 'b.png')]);
    assert.notEqual(a.data![0].b64_json, b.data![0].b64_json, 'different images, different results');
    const ran = rig.edit.prompts.slice(prompts);
    assert.equal(ran.length, 2);
    const [upA] = uploadsOf(rig.edit, pngA).slice(-1);
    const [upB] = uploadsOf(rig.edit, pngB);
    assert.ok(upA && upB && upA !== upB, `distinct uploads: ${upA} ${upB}`);
    assert.deepEqual(
      ran.map((p) => p.prompt['378'].inputs.image).sort(),
      [upA, upB].sort(),
      'each prompt reads its own upload',
    );
    const jobs = (await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs?limit=2&status=done', MASTER)).body.data;
    for (const job of jobs) {
      const sent = upA.includes(job.id) ? pngA : pngB;
      const kept = await fetch(`${rig.url}/v1/jobs/${job.id}/input/0`, { headers: bearer(MASTER) });
      assert.ok(Buffer.from(await kept.arrayBuffer()).equals(sent), `${job.id} kept its own input`);
    }
  });

  test('owner gating: another user gets the same 404 as for a job that does not exist, everywhere', async () => {
    const alice = await createUser(rig.url, 'alice');
    const bob = await createUser(rig.url, 'bob');
    const job = await submit({ model: 'inpaint', prompt: 'mine', images: { image: pngA.toString('base64') } }, alice);
    assert.equal(job.status, 'done');
    const nobody = await call(rig.url, 'GET', `/v1/jobs/${UNKNOWN_ID}`, alice);
    assert.equal(nobody.status, 404);
    assert.equal(nobody.body.error.type, 'not_found_error');
    for (const [method, path] of [
      ['GET', ''],
      ['GET', '/result/0'],
      ['GET', '/result/0?format=webp'],
      ['GET', '/input/0'],
      ['GET', '/preview'],
      ['GET', '/events'],
      ['POST', '/cancel'],
    ] as const) {
      const r = await call(rig.url, method, `/v1/jobs/${job.id}${path}`, bob);
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.deepEqual(r.body.error, nobody.body.error, `${method} ${path}: no telling it exists`);
      assert.equal(
        (await call(rig.url, method, `/v1/jobs/${job.id}${path}`, alice)).status,
        path === '/preview' ? 404 : 200,
        `alice ${path}`,
      );
    }
    const ids = async (key: string) =>
      (await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs?limit=500', key)).body.data.map((j) => j.id);
    assert.deepEqual(await ids(alice), [job.id]);
    assert.deepEqual(await ids(bob), []);
    assert.ok((await ids(MASTER)).includes(job.id), 'the master key sees every job');
    assert.equal((await call(rig.url, 'GET', `/v1/jobs/${job.id}`, undefined)).status, 401);
  });

  test('files: results with thumbnails, previews while running, and the 400s and 404s of bad paths and queries', async (t) => {
    const job = await submit({ model: 'sd15', prompt: 'files' });
    const base = `/v1/jobs/${job.id}`;
    const get = (path: string) => fetch(`${rig.url}${path}`, { headers: bearer(MASTER) });
    const thumb = await get(`${base}/result/0?format=webp&w=4`);
    assert.equal(thumb.status, 200);
    assert.equal(thumb.headers.get('content-type'), 'image/webp');
    const meta = await sharp(Buffer.from(await thumb.arrayBuffer())).metadata();
    assert.equal(meta.format, 'webp');
    assert.ok((meta.width ?? 99) <= 4);
    assert.equal(
      (await get(`${base}/result/0?w=4&h=4`)).headers.get('content-type'),
      'image/webp',
      'a size alone: webp',
    );
    assert.equal((await get(`${base}/result/0?format=jpeg&h=4`)).headers.get('content-type'), 'image/jpeg');
    for (const [query, param] of [
      ['format=gif', 'format'],
      ['w=0', 'w'],
      ['w=9999', 'w'],
      ['h=abc', 'h'],
      ['w=1.5', 'w'],
    ]) {
      const r = await call(rig.url, 'GET', `${base}/result/0?${query}`, MASTER);
      assert.equal(r.status, 400, query);
      assert.equal(r.body.error.param, param, query);
    }
    for (const path of [
      `${base}/result/abc`,
      `${base}/result/-1`,
      `${base}/result/01`,
      `${base}/result/7`,
      `${base}/input/0`,
      `${base}/preview`,
      '/v1/jobs/job_123',
      `/v1/jobs/${job.id.toUpperCase()}`,
      `/v1/jobs/${UNKNOWN_ID}/result/0`,
    ]) {
      assert.equal((await get(path)).status, 404, path);
    }
    const audio = await submit({ model: 'audio', prompt: 'bells' });
    const notImage = await call(rig.url, 'GET', `/v1/jobs/${audio.id}/result/0?format=png`, MASTER);
    assert.equal(notImage.status, 400, 'no thumbnail of a sound');

    rig.comfy.setKnobs({ previews: true, stepMs: 60, steps: 30 });
    t.after(fast);
    const running = await submit({ model: 'sd15', prompt: 'preview me', mode: 'async' });
    await pollJob(rig.url, running.id, MASTER, (v) => v.preview);
    const preview = await get(`/v1/jobs/${running.id}/preview`);
    assert.equal(preview.status, 200);
    assert.equal(preview.headers.get('content-type'), 'image/png');
    assert.match(preview.headers.get('cache-control') ?? '', /no-store/);
    await call(rig.url, 'POST', `/v1/jobs/${running.id}/cancel`, MASTER);
  });

  test('the list: limit and status filter; bad values are 400s naming them', async () => {
    const two = (await call<{ object: string; data: JobView[] }>(rig.url, 'GET', '/v1/jobs?limit=2', MASTER)).body;
    assert.equal(two.object, 'list');
    assert.equal(two.data.length, 2);
    const done = (await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs?status=done', MASTER)).body.data;
    assert.ok(done.length > 0 && done.every((j) => j.status === 'done'));
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=x', 'limit'],
      ['status=finished', 'status'],
    ]) {
      const r = await call(rig.url, 'GET', `/v1/jobs?${query}`, MASTER);
      assert.equal(r.status, 400, query);
      assert.equal(r.body.error.param, param);
    }
  });
});

describe('media jobs while the gateway is open', () => {
  let rig: MediaRig;
  before(async () => {
    rig = await startMediaRig({ overrides: { api_key: undefined, trust_proxy: true } });
  });
  after(async () => rig?.close());

  test('each client IP owns its jobs; open-mode callers are no admins for jobs', async () => {
    const from = (ip: string) => ({ 'x-forwarded-for': ip });
    const made = await call<JobView>(
      rig.url,
      'POST',
      '/v1/generations',
      undefined,
      { model: 'sd15', prompt: 'open' },
      from('10.0.0.1'),
    );
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const id = made.body.id;
    assert.equal((await call(rig.url, 'GET', `/v1/jobs/${id}`, undefined, undefined, from('10.0.0.1'))).status, 200);
    assert.equal((await call(rig.url, 'GET', `/v1/jobs/${id}`, undefined, undefined, from('10.0.0.2'))).status, 404);
    assert.equal(
      (await call(rig.url, 'GET', `/v1/jobs/${id}/result/0`, undefined, undefined, from('10.0.0.2'))).status,
      404,
    );
    const list = await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs', undefined, undefined, from('10.0.0.2'));
    assert.deepEqual(list.body.data, []);
  });
});
