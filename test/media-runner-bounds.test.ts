/**
 * What bounds a media job on a box, through the gateway's media service over real sockets
 * against fake ComfyUI boxes: a cancel stops an upload under way and frees the slot at once;
 * an upload slower than max_wait is given up; a prompt left on a box that stopped answering is
 * taken off it before the next one is submitted there; every failover acquire parks with a
 * budget of its own; a prompt someone else interrupted on the box fails over instead of
 * passing for a cancel.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { GatewayConfig } from '../src/config/types.ts';
import type { GenerationSubmit, JobView } from '../src/media/service-types.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake, ComfyKnobs } from './fakes/comfyui-types.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import { startGateway, type BackendInput, type TestGateway } from './helpers/gateway.ts';
import { pngA } from './helpers/media-gateway.ts';
import { caller, FAST_COMFY, settle, submitText } from './helpers/media-service.ts';
import { waitFor } from './helpers/wait.ts';

describe('media jobs: what bounds a job on a box', () => {
  let fakes: ComfyFake[] = [];
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
    await Promise.all(fakes.map((f) => f.close()));
    fakes = [];
  });

  /** `comfy-<i>` per knobs entry; `models` maps an alias to the workflow file and the boxes it runs on. */
  async function fleet(
    knobs: Partial<ComfyKnobs>[],
    models: Record<string, [string, number[]]>,
    extra: (i: number) => Partial<BackendInput> = () => ({}),
    overrides: Partial<GatewayConfig> = {},
  ): Promise<TestGateway> {
    fakes = await Promise.all(knobs.map((k) => startComfyFake({ knobs: k })));
    const image_models: GatewayConfig['image_models'] = {};
    for (const [alias, [file, boxes]] of Object.entries(models)) {
      image_models[alias] = boxes.map((i) => ({ backend: `comfy-${i}`, workflow_json: workflow(file) }));
    }
    gw = await startGateway(
      fakes.map((f, i) => ({ name: `comfy-${i}`, url: f.url, type: 'comfyui' as const, ...FAST_COMFY, ...extra(i) })),
      { image_models, ...overrides },
    );
    return gw;
  }

  const inflight = (g: TestGateway) => g.gateway.scheduler.snapshot().backends.reduce((n, b) => n + b.inflight, 0);
  const WAN = 'img2video_wan_lowram_api.json';
  const SD15 = 'txt2img_sd15_api.json';

  function submitImage(g: TestGateway, alias: string): Promise<JobView> {
    const request: GenerationSubmit = {
      alias,
      prompt: 'dancing',
      params: {},
      files: { image: { bytes: pngA, mime: 'image/png' } },
      endpoint: '/v1/generations',
      requestId: `t-${Math.random()}`,
    };
    return g.gateway.media.submit(caller(), request);
  }

  test('a cancel stops an upload under way: the slot is free at once and nothing is queued', async () => {
    const g = await fleet([{ uploadMs: 5000 }], { wan: [WAN, [0]] });
    const job = await submitImage(g, 'wan');
    await waitFor(() => fakes[0].requests.some((r) => r.path === '/upload/image'), 'the upload started');
    const cancelledAt = Date.now();
    const cancelled = await g.gateway.media.cancel(job.id, caller());
    assert.equal(cancelled?.status, 'cancelled');
    await waitFor(() => inflight(g) === 0, 'the slot is released', 1500);
    assert.ok(Date.now() - cancelledAt < 2000, `the cancel took ${Date.now() - cancelledAt} ms`);
    assert.equal((await settle(g, job.id)).status, 'cancelled');
    assert.equal(fakes[0].prompts.length, 0, 'nothing was submitted');
  });

  test('an upload slower than max_wait is given up: the job fails with upload_failed instead of holding the slot', async () => {
    const g = await fleet([{ uploadMs: 4000 }], { wan: [WAN, [0]] }, () => ({ max_wait: 1 }));
    const started = Date.now();
    const done = await settle(g, (await submitImage(g, 'wan')).id);
    assert.equal(done.status, 'failed', JSON.stringify(done));
    assert.equal(done.error?.code, 'upload_failed');
    assert.ok(Date.now() - started < 3000, `it took ${Date.now() - started} ms`);
    assert.equal(inflight(g), 0);
    assert.equal(fakes[0].prompts.length, 0, 'never run on a file that may not have arrived');
  });

  test('a prompt left on a box that stopped answering is taken off it before the next one is submitted there', async () => {
    const slow = { stepMs: 100, steps: 30 };
    const g = await fleet([slow, slow], { sd15: [SD15, [0, 1]], only0: [SD15, [0]], only1: [SD15, [1]] });
    const first = await submitText(g, 'sd15');
    await waitFor(() => fakes.some((f) => f.prompts.some((p) => p.status === 'running')), 'the job runs somewhere');
    const dead = fakes.findIndex((f) => f.prompts.some((p) => p.status === 'running'));
    const orphan = fakes[dead].prompts[0];
    fakes[1 - dead].setKnobs({ stepMs: 20, steps: 4 });
    // the box stops answering HTTP, but its executor goes on with our prompt
    fakes[dead].setKnobs({ refuse: true });
    const moved = await settle(g, first.id);
    assert.equal(moved.status, 'done', JSON.stringify(moved.error));
    assert.equal(moved.backend, `comfy-${1 - dead}`);
    assert.equal(orphan.status, 'running', 'the orphan still runs on the box that did not answer');

    fakes[dead].setKnobs({ refuse: false });
    await g.gateway.discovery.pollAll();
    const next = await settle(g, (await submitText(g, `only${dead}`)).id);
    assert.equal(next.status, 'done', JSON.stringify(next.error));
    const status: string = orphan.status;
    assert.ok(
      status === 'interrupted' || status === 'deleted',
      `the orphan was taken off, not left to run (${status})`,
    );
    const ours = fakes[dead].prompts.at(-1)!;
    assert.ok(ours.startedAt! >= orphan.endedAt!, 'never two prompts of ours at once on the box');
  });

  test('a failover after max_wait parks for the next box with a budget of its own', async () => {
    const g = await fleet(
      [
        { stepMs: 1000, steps: 30 },
        { stepMs: 400, steps: 4 },
      ],
      { onB: [SD15, [1]], both: [SD15, [0, 1]] },
      (i) => (i === 0 ? { max_wait: 1.2 } : {}),
      { media_park_timeout_s: 1 },
    );
    const busy = await submitText(g, 'onB');
    await waitFor(() => fakes[1].prompts.some((p) => p.status === 'running'), 'comfy-1 is busy');
    // comfy-0 is the free box: past its max_wait (longer than the park budget) comfy-1 is still busy a little
    const job = await settle(g, (await submitText(g, 'both')).id);
    assert.equal(job.status, 'done', JSON.stringify(job.error));
    assert.equal(job.backend, 'comfy-1');
    assert.deepEqual(
      (job.summary?.failovers as { backend: string; code: string }[]).map((f) => [f.backend, f.code]),
      [['comfy-0', 'max_wait']],
    );
    assert.equal((await settle(g, busy.id)).status, 'done');
  });

  test('a prompt interrupted on the box by someone else fails over; it is no cancel of the caller', async () => {
    const slow = { stepMs: 200, steps: 10 };
    const g = await fleet([slow, slow], { sd15: [SD15, [0, 1]] });
    const job = await submitText(g, 'sd15');
    await waitFor(() => fakes.some((f) => f.prompts.some((p) => p.status === 'running')), 'the job runs');
    const box = fakes.findIndex((f) => f.prompts.some((p) => p.status === 'running'));
    fakes[1 - box].setKnobs({ stepMs: 20, steps: 4 });
    // ComfyUI's own Cancel button: a global interrupt
    const r = await fetch(`${fakes[box].url}/interrupt`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(r.status, 200);
    const done = await settle(g, job.id);
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.equal(done.backend, `comfy-${1 - box}`);
    assert.deepEqual(
      (done.summary?.failovers as { backend: string; code: string }[]).map((f) => [f.backend, f.code]),
      [[`comfy-${box}`, 'interrupted']],
    );
  });
});
