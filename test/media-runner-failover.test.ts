/**
 * Media jobs across two fake ComfyUI boxes, through the gateway's media service over real
 * sockets: a job runs where a slot is free and its files come back; a box that dies mid-job,
 * one that runs past max_wait and one whose workflow fails hand the job to the other box —
 * an execution error once, never twice on one box; a job always releases its slot, even when its
 * attempt throws.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterEach, describe, test } from 'node:test';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake, ComfyKnobs } from './fakes/comfyui-types.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { FAST_COMFY, sd15Models, settle, submitText } from './helpers/media-service.ts';
import { waitFor } from './helpers/wait.ts';

describe('media jobs: running and failing over', () => {
  let fakes: ComfyFake[] = [];
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
    await Promise.all(fakes.map((f) => f.close()));
    fakes = [];
  });

  async function fleet(
    knobs: Partial<ComfyKnobs>[] = [{}, {}],
    extra: Record<string, unknown> = {},
  ): Promise<TestGateway> {
    fakes = await Promise.all(knobs.map((k) => startComfyFake({ knobs: k })));
    const names = fakes.map((_, i) => `comfy-${i}`);
    gw = await startGateway(
      fakes.map((f, i) => ({ name: names[i], url: f.url, type: 'comfyui' as const, ...FAST_COMFY, ...extra })),
      { image_models: sd15Models(names) },
    );
    return gw;
  }

  const inflight = (g: TestGateway) =>
    Object.fromEntries(g.gateway.scheduler.snapshot().backends.map((b) => [b.name, b.inflight]));

  test('a job runs on a free box: its image comes back with digest and size, the seed is reported, the slot is freed', async () => {
    const g = await fleet([{}]);
    const queued = await submitText(g, 'sd15', { seed: 1234 });
    assert.equal(queued.status, 'queued');
    const done = await settle(g, queued.id);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    assert.equal(done.backend, 'comfy-0');
    assert.equal(done.seed, '1234');
    assert.equal(done.progress, 100);
    assert.equal(done.results.length, 1);
    const [result] = done.results;
    assert.equal(result.kind, 'image');
    assert.equal(result.mime, 'image/png');
    const file = await g.gateway.media.result(done.id, 0, {
      owner: 'user:1',
      admin: false,
      allow: [],
      source: 'x',
      userId: null,
    });
    assert.ok(file);
    assert.equal(createHash('sha256').update(file.bytes).digest('hex'), result.sha256);
    assert.equal(result.bytes, file.bytes.length);
    assert.ok(result.width && result.height, 'an image result carries its dimensions');
    const sent = fakes[0].prompts.at(-1)!;
    assert.equal(sent.prompt['69'].inputs.value, 1234, 'the seed reached the workflow');
    assert.equal(sent.prompt['61'].inputs.value, 'a lighthouse', 'the prompt reached the workflow');
    assert.deepEqual(inflight(g), { 'comfy-0': 0 });
  });

  test('a big seed reaches ComfyUI exactly', async () => {
    const g = await fleet([{}]);
    const job = await submitText(g, 'sd15', { seed: 9223372036854775807n });
    const done = await settle(g, job.id);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    assert.equal(done.seed, '9223372036854775807');
    const body = fakes[0].requests.find((r) => r.path.endsWith('/prompt') && r.method === 'POST')!;
    assert.match(body.rawBody.toString(), /"value":9223372036854775807\b/);
  });

  test('the first box dies mid-job: the job finishes on the second', async () => {
    const g = await fleet([{ stepMs: 150, steps: 20 }, {}]);
    // comfy-1 is busy with a job of its own first, so the next one lands on comfy-0
    const job = await submitText(g, 'sd15');
    await waitFor(() => fakes.some((f) => f.prompts.some((p) => p.status === 'running')), 'the job runs somewhere');
    const dying = fakes.findIndex((f) => f.prompts.some((p) => p.status === 'running'));
    void fakes[dying].restart({ downMs: 4000, mode: 'refused' });
    const done = await settle(g, job.id);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    assert.equal(done.backend, `comfy-${1 - dying}`);
    assert.deepEqual(Object.values(inflight(g)), [0, 0]);
  });

  test('an execution error moves the job to the other box once; on both it fails, naming the error', async () => {
    const g = await fleet([{ failNode: '310' }, {}]);
    const moved = await settle(g, (await submitText(g, 'sd15')).id);
    assert.equal(moved.status, 'done', JSON.stringify(moved.error));
    assert.equal(moved.backend, 'comfy-1');
    fakes[1].setKnobs({ failNode: '310' });
    const before = fakes.map((f) => f.prompts.length);
    const failed = await settle(g, (await submitText(g, 'sd15')).id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error?.code, 'execution_error');
    assert.deepEqual(
      fakes.map((f, i) => f.prompts.length - before[i]),
      [1, 1],
      'one run per box, never again on the same one',
    );
    assert.deepEqual(Object.values(inflight(g)), [0, 0]);
  });

  test('an execution error on the only box fails the job without retrying there', async () => {
    const g = await fleet([{ failNode: '310' }]);
    const failed = await settle(g, (await submitText(g, 'sd15')).id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error?.code, 'execution_error');
    assert.equal(fakes[0].prompts.length, 1);
  });

  test('past max_wait the prompt is interrupted and the job fails over', async () => {
    const g = await fleet(
      [
        { stepMs: 1000, steps: 30 },
        { stepMs: 1000, steps: 30 },
      ],
      { max_wait: 0.4 },
    );
    const first = await submitText(g, 'sd15');
    const failed = await settle(g, first.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error?.code, 'max_wait');
    assert.deepEqual(
      fakes.map((f) => f.prompts.length),
      [1, 1],
      'tried on each box once',
    );
    await waitFor(() => fakes.every((f) => f.interrupts() >= 1), 'each box was told to stop');
    assert.deepEqual(Object.values(inflight(g)), [0, 0]);
  });

  test('a box whose executor is stuck is marked down by the watchdog and its waiting job moves to the other box', async () => {
    fakes = await Promise.all([startComfyFake({ knobs: { stuck: true } }), startComfyFake({ knobs: { stuck: true } })]);
    gw = await startGateway(
      fakes.map((f, i) => ({
        name: `comfy-${i}`,
        url: f.url,
        type: 'comfyui' as const,
        ...FAST_COMFY,
        stuck_after_s: 0.2,
      })),
      { image_models: sd15Models(['comfy-0', 'comfy-1']), health_check_interval: 0.1 },
    );
    const g = gw;
    const job = await submitText(g, 'sd15');
    await waitFor(() => fakes.some((f) => f.prompts.length === 1), 'the job is queued on a box');
    const stuck = fakes.findIndex((f) => f.prompts.length === 1);
    fakes[1 - stuck].setKnobs({ stuck: false });
    const done = await settle(g, job.id);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    assert.equal(done.backend, `comfy-${1 - stuck}`);
    assert.deepEqual(
      (done.summary?.failovers as { backend: string; code: string }[]).map((f) => [f.backend, f.code]),
      [[`comfy-${stuck}`, 'exec_stuck']],
    );
    assert.equal(fakes[stuck].prompts[0].status, 'deleted', 'the prompt was taken off the stuck box');
  });

  test("a prompt the box refuses fails over; refused everywhere, the job fails with the box's reason", async () => {
    const g = await fleet([{}, {}]);
    for (const f of fakes) f.objectInfo.KSampler.input.required.sampler_name[0] = ['only_this_one'];
    const failed = await settle(g, (await submitText(g, 'sd15', { sampler: 'euler' })).id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error?.code, 'prompt_refused');
    assert.match(failed.error?.message ?? '', /sampler_name|value_not_in_list|not in list/i);
  });

  test("a throw inside an attempt (the gateway's fault) fails the job, frees its slot, logs one row", async () => {
    const g = await fleet([{}]);
    const clients = g.gateway.comfyClients;
    const realGet = clients.get.bind(clients);
    let throws = 1;
    clients.get = (backend) => {
      if (throws-- > 0) throw new Error('thrown on purpose inside the attempt');
      return realGet(backend);
    };
    const queued = await submitText(g, 'sd15');
    const failed = await settle(g, queued.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error?.code, 'internal_error');
    assert.deepEqual(inflight(g), { 'comfy-0': 0 }, 'the slot came back');
    const rows = g.gateway.callLog.recent({}).filter((r) => r.model === 'sd15');
    assert.deepEqual(
      rows.map((r) => [r.status, r.reason]),
      [[502, 'internal_error']],
    );
    const next = await settle(g, (await submitText(g, 'sd15')).id);
    assert.equal(next.status, 'done', JSON.stringify(next.error));
  });
});
