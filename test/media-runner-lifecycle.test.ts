/**
 * The life of media jobs in the gateway's media service, against fake ComfyUI boxes over
 * sockets: parking on a busy single-slot box (with a queue position), cancelling a parked
 * and a running job, LoRA-aware routing that parks for the right box, owner gating, the TTL
 * prune, and the reconcile at start-up of what a previous process left running.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { JobStore } from '../src/media/jobs/store.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake, ComfyKnobs } from './fakes/comfyui-types.ts';
import { submitPrompt } from './fakes/comfyui-client.ts';
import { defaultWorkflow } from './fakes/comfyui-workflows.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { ADMIN, caller, FAST_COMFY, sd15Models, settle, submitText } from './helpers/media-service.ts';
import { waitFor } from './helpers/wait.ts';
import { workflow } from './helpers/comfy-workflows.ts';

describe('media jobs: parking, cancel, LoRA routing, gating, TTL, reconcile', () => {
  let fakes: ComfyFake[] = [];
  let gw: TestGateway | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
    await Promise.all(fakes.map((f) => f.close()));
    fakes = [];
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  async function single(
    knobs: Partial<ComfyKnobs> = {},
    overrides: Record<string, unknown> = {},
    storeDir?: string,
  ): Promise<TestGateway> {
    fakes = [await startComfyFake({ knobs })];
    gw = await startGateway(
      [{ name: 'comfy', url: fakes[0].url, type: 'comfyui', ...FAST_COMFY }],
      { image_models: sd15Models(['comfy']), ...overrides },
      { storeDir },
    );
    return gw;
  }

  test('a second job parks behind a busy single-slot box, with its queue position, and runs after', async () => {
    const g = await single({ stepMs: 60, steps: 5 });
    const first = await submitText(g, 'sd15');
    await waitFor(() => fakes[0].prompts.some((p) => p.status === 'running'), 'the first job runs on the box');
    const second = await submitText(g, 'sd15');
    const parked = g.gateway.media.view(second.id, caller());
    assert.equal(parked?.status, 'queued');
    assert.equal(parked?.queue_position, 1);
    assert.equal(fakes[0].prompts.length, 1, 'the box never sees a second prompt while the slot is held');
    const done = await settle(g, second.id);
    assert.equal(done.status, 'done');
    assert.equal(fakes[0].prompts.length, 2);
  });

  test('cancel: a parked job leaves the queue unsent; a running one is interrupted on its box', async () => {
    const g = await single({ stepMs: 200, steps: 50 });
    const running = await submitText(g, 'sd15');
    await waitFor(() => fakes[0].prompts.some((p) => p.status === 'running'), 'the first job runs');
    const parked = await submitText(g, 'sd15');
    const events: string[] = [];
    g.gateway.media.subscribe(parked.id, caller(), (e) => events.push(e.type));
    const cancelledParked = await g.gateway.media.cancel(parked.id, caller());
    assert.equal(cancelledParked?.status, 'cancelled');
    assert.equal(fakes[0].prompts.length, 1, 'the parked job was never sent');
    await waitFor(() => events.includes('cancelled'), 'its listener hears the end');
    assert.deepEqual(events, ['queued', 'cancelled']);

    const cancelledRunning = await g.gateway.media.cancel(running.id, caller());
    assert.equal(cancelledRunning?.status, 'cancelled');
    await waitFor(() => fakes[0].prompts[0].status === 'interrupted', 'the box stopped it');
    assert.equal(fakes[0].interrupts(), 1);
    await waitFor(() => g.gateway.scheduler.snapshot().backends[0].inflight === 0, 'the slot came back');
    assert.equal((await settle(g, running.id)).status, 'cancelled', 'a cancel is never overwritten');
  });

  test("jobs are their owner's: others get nothing, admins see all", async () => {
    const g = await single();
    const mine = await settle(g, (await submitText(g, 'sd15', {}, caller('user:1'))).id);
    const other = caller('user:2');
    assert.equal(g.gateway.media.view(mine.id, other), undefined);
    assert.equal(await g.gateway.media.result(mine.id, 0, other), undefined);
    assert.equal(await g.gateway.media.cancel(mine.id, other), undefined);
    assert.equal(
      g.gateway.media.subscribe(mine.id, other, () => {}),
      undefined,
    );
    assert.deepEqual(g.gateway.media.list(other, {}), []);
    assert.equal(g.gateway.media.view(mine.id, ADMIN)?.id, mine.id);
    assert.deepEqual(
      g.gateway.media.list(caller('user:1'), {}).map((j) => j.id),
      [mine.id],
    );
  });

  test('an alias outside the allow-list, or unknown, is a 404; an unknown param a 400 naming it; no job is made', async () => {
    const g = await single();
    await assert.rejects(submitText(g, 'sd15', {}, caller('user:3', { allow: ['other-model'] })), { status: 404 });
    await assert.rejects(submitText(g, 'nope'), { status: 404 });
    await assert.rejects(submitText(g, 'sd15', { colour: 'red' }), { status: 400, param: 'colour' });
    await assert.rejects(submitText(g, 'sd15', { lora_1: 'not-installed.safetensors' }), {
      status: 400,
      code: 'lora_not_found',
    });
    assert.deepEqual(g.gateway.media.list(ADMIN, {}), []);
  });

  test('/health lists the generation aliases with their backends, and what is wrong with them', async () => {
    fakes = [await startComfyFake()];
    const broken = {
      backend: 'comfy',
      workflow_json: workflow('txt2img_sd15_api.json'),
      mapping: { prompt: { node: '61', field: 'no_such_input' } },
    };
    gw = await startGateway([{ name: 'comfy', url: fakes[0].url, type: 'comfyui', ...FAST_COMFY }], {
      image_models: { ...sd15Models(['comfy']), broken: [broken] },
    });
    const health = (await (await fetch(`${gw.url}/health`)).json()) as {
      media: { aliases: Record<string, string[]>; problems: { path: string; message: string }[]; running: number };
    };
    assert.deepEqual(health.media.aliases.sd15, ['comfy']);
    assert.equal(health.media.running, 0);
    const problem = health.media.problems.find((p) => p.path.startsWith('image_models.broken'));
    assert.ok(problem, JSON.stringify(health.media.problems));
    assert.match(problem.message, /no_such_input/);
  });

  test('LoRA routing: a job asking for a LoRA only one box has parks for that box even when the other is free', async () => {
    fakes = [await startComfyFake({ knobs: { stepMs: 80, steps: 5 } }), await startComfyFake()];
    const loraInputs = (f: ComfyFake) => f.objectInfo['Lora Loader Stack (rgthree)'].input.required;
    const lora = 'only-on-b.safetensors';
    for (const key of Object.keys(loraInputs(fakes[0])).filter((k) => k.startsWith('lora_'))) {
      const spec = loraInputs(fakes[1])[key];
      spec[0] = [...spec[0], lora];
    }
    gw = await startGateway(
      fakes.map((f, i) => ({ name: `comfy-${i}`, url: f.url, type: 'comfyui' as const, ...FAST_COMFY })),
      {
        image_models: {
          sd15: [0, 1].map((i) => ({ backend: `comfy-${i}`, workflow_json: workflow('txt2img_sd15_api.json') })),
        },
      },
    );
    assert.deepEqual(gw.gateway.media.loras('sd15', caller())?.includes(lora), true);
    // comfy-1 (the one with the LoRA) busy; comfy-0 free
    const busy = await submitText(gw, 'sd15', { lora_1: lora });
    await waitFor(() => fakes[1].prompts.some((p) => p.status === 'running'), 'the LoRA job runs on comfy-1');
    const waiting = await submitText(gw, 'sd15', { lora_1: lora });
    assert.equal(
      gw.gateway.media.view(waiting.id, caller())?.status,
      'queued',
      'it parks rather than run where the LoRA is missing',
    );
    const done = await settle(gw, waiting.id);
    assert.equal(done.backend, 'comfy-1');
    assert.equal(fakes[0].prompts.length, 0);
    assert.equal((await settle(gw, busy.id)).backend, 'comfy-1');
  });

  test('expired jobs are pruned with their files', async () => {
    const g = await single({}, { job_ttl_h: 0.0001 }); // 0.36 s
    const done = await settle(g, (await submitText(g, 'sd15')).id);
    const folder = join(g.storeDir, 'jobs', done.id);
    assert.ok(existsSync(folder));
    await new Promise((r) => setTimeout(r, 450));
    assert.equal(await g.gateway.media.prune(), 1);
    assert.equal(existsSync(folder), false);
    assert.equal(g.gateway.media.view(done.id, ADMIN), undefined);
  });

  test('at start-up a job left running by a previous process is failed and its prompt stopped on the box', async () => {
    const storeDir = mkdtempSync(join(tmpdir(), 'llmgw-media-'));
    dirs.push(storeDir);
    fakes = [await startComfyFake({ knobs: { stuck: true } })];
    const orphanPrompt = await submitPrompt(fakes[0], defaultWorkflow('left over'));
    const store = JobStore.open(join(storeDir, 'jobs'));
    const orphan = store.create({
      owner: 'user:1',
      alias: 'sd15',
      request: { params: {} },
      createdAt: Date.now(),
      expiresAt: Date.now() + 3_600_000,
    });
    store.update(orphan.id, { status: 'running', backend: 'comfy', promptId: orphanPrompt.body.prompt_id });
    store.close();
    gw = await startGateway(
      [{ name: 'comfy', url: fakes[0].url, type: 'comfyui', ...FAST_COMFY }],
      { image_models: sd15Models(['comfy']) },
      { storeDir },
    );
    const after = gw.gateway.media.view(orphan.id, ADMIN);
    assert.equal(after?.status, 'failed');
    assert.equal(after?.error?.code, 'gateway_restarted');
    await waitFor(() => fakes[0].prompts[0].status === 'deleted', 'the left-over prompt was taken off the box');
  });
});
