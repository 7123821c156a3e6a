/**
 * What a media job sends a box and leaves there, over real sockets against the fake ComfyUI:
 * nothing before the box's GPU group finished switching (llama-swap unloading); the job's
 * uploaded inputs overwritten with the placeholder however the attempt ends (a cancel too);
 * and the backend's credential on every request — the media client's HTTP and websocket, the
 * health checks and the auto-restart reboot.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, test } from 'node:test';
import { embeddedDefaultConfig } from '../src/config/defaults.ts';
import { placeholderPng } from '../src/media/compiler/index.ts';
import { MediaJobs } from '../src/media/service.ts';
import type { GenerationSubmit, JobView } from '../src/media/service-types.ts';
import { submitPrompt } from './fakes/comfyui-client.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { defaultWorkflow } from './fakes/comfyui-workflows.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { pngA } from './helpers/media-gateway.ts';
import { caller, FAST_COMFY, sd15Models, settle } from './helpers/media-service.ts';
import { waitFor } from './helpers/wait.ts';

describe('media jobs: what reaches the box', () => {
  let fakes: ComfyFake[] = [];
  let gw: TestGateway | undefined;
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    await gw?.close();
    gw = undefined;
    await Promise.all(fakes.map((f) => f.close()));
    fakes = [];
  });

  const wanModels = () => ({ wan: [{ backend: 'comfy', workflow_json: workflow('img2video_wan_lowram_api.json') }] });
  const imageRequest = (): GenerationSubmit => ({
    alias: 'wan',
    prompt: 'dancing',
    params: {},
    files: { image: { bytes: pngA, mime: 'image/png' } },
    endpoint: '/v1/generations',
    requestId: `t-${Math.random()}`,
  });

  test('nothing is sent to the box before its GPU group finished switching', async () => {
    fakes = [await startComfyFake()];
    gw = await startGateway([{ name: 'comfy-0', url: fakes[0].url, type: 'comfyui', ...FAST_COMFY }], {
      image_models: sd15Models(['comfy-0']),
    });
    const g = gw.gateway;
    const jobsDir = mkdtempSync(join(tmpdir(), 'llmgw-jobs-'));
    let release!: () => void;
    const asked: string[] = [];
    // a media service of its own on the gateway's scheduler, clients and catalog, with the one dep the gateway wires
    const media = new MediaJobs({
      jobsDir,
      scheduler: g.scheduler,
      registry: g.registry,
      clients: g.comfyClients,
      catalog: g.generations,
      objectInfo: (name) => g.comfy.objectInfo(name),
      config: () => embeddedDefaultConfig(),
      recordOutcome: () => {},
      probe: () => {},
      log: pino({ level: 'silent' }),
      gpuSettled: (backend) => {
        asked.push(backend);
        return new Promise<void>((resolve) => {
          release = resolve;
        });
      },
    });
    media.start();
    cleanups.push(async () => {
      await media.close();
      rmSync(jobsDir, { recursive: true, force: true });
    });
    const job = await media.submit(caller(), {
      alias: 'sd15',
      prompt: 'p',
      params: {},
      files: {},
      endpoint: '/v1/generations',
      requestId: 'gpu',
    });
    await waitFor(() => asked.length === 1, 'the runner asks whether the group settled');
    assert.deepEqual(asked, ['comfy-0']);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(fakes[0].prompts.length, 0, 'no prompt while llama-swap may still hold the card');
    release();
    const done = await media.settled(job.id);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    assert.equal(fakes[0].prompts.length, 1);
  });

  test("a cancelled job's uploaded input is overwritten with the placeholder on the box", async () => {
    fakes = [await startComfyFake({ knobs: { stepMs: 200, steps: 20 } })];
    gw = await startGateway([{ name: 'comfy', url: fakes[0].url, type: 'comfyui', ...FAST_COMFY }], {
      image_models: wanModels(),
    });
    const job: JobView = await gw.gateway.media.submit(caller(), imageRequest());
    await waitFor(() => fakes[0].prompts.some((p) => p.status === 'running'), 'the job runs');
    const name = `gw_${job.id}_image.png`;
    assert.ok(fakes[0].uploads.get(name)?.equals(pngA), "the job's image is on the box while it runs");
    assert.equal((await gw.gateway.media.cancel(job.id, caller()))?.status, 'cancelled');
    await waitFor(
      () => fakes[0].uploads.get(name)?.equals(placeholderPng()) === true,
      'the input is overwritten after the cancel',
    );
  });

  test("the backend's credential goes with every request to the box: uploads, prompt, history, view, websocket, health", async () => {
    fakes = [await startComfyFake()];
    gw = await startGateway(
      [{ name: 'comfy', url: fakes[0].url, type: 'comfyui', api_key: 'comfy-secret-1', ...FAST_COMFY }],
      { image_models: wanModels() },
    );
    const done = await settle(gw, (await gw.gateway.media.submit(caller(), imageRequest())).id);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    await waitFor(() => fakes[0].requests.some((r) => r.ws), 'the websocket opened');
    const seen = new Set(fakes[0].requests.map((r) => `${r.ws ? 'WS' : r.method} ${r.path}`));
    for (const want of [
      'POST /upload/image',
      'POST /prompt',
      'GET /view',
      'GET /object_info',
      'GET /queue',
      'GET /system_stats',
      'WS /ws',
    ]) {
      assert.ok(seen.has(want), `${want} was asked (${[...seen].join(', ')})`);
    }
    assert.ok(
      [...seen].some((s) => s.startsWith('GET /history/')),
      'the history was polled',
    );
    const without = fakes[0].requests
      .filter((r) => r.headers.authorization !== 'Bearer comfy-secret-1')
      .map((r) => `${r.ws ? 'WS' : r.method} ${r.path}`);
    assert.deepEqual(without, [], 'every request carried the credential');
  });

  test("the auto-restart reboot carries the backend's credential too", async () => {
    const comfy = await startComfyFake({ knobs: { manager: 'v4', stuck: true } });
    fakes = [comfy];
    assert.equal((await submitPrompt(comfy, defaultWorkflow('never runs'))).status, 200);
    gw = await startGateway([
      {
        name: 'comfy',
        url: comfy.url,
        type: 'comfyui',
        api_key: 'comfy-secret-2',
        stuck_after_s: 0.05,
        auto_restart: true,
      },
    ]);
    await gw.gateway.discovery.probe('comfy');
    await new Promise((r) => setTimeout(r, 80));
    await gw.gateway.discovery.probe('comfy');
    assert.equal((await gw.gateway.comfy.lastRestart('comfy')!.done).ok, true);
    const reboot = comfy.requests.find((r) => r.path.endsWith('/manager/reboot'));
    assert.equal(reboot?.headers.authorization, 'Bearer comfy-secret-2');
    const health = comfy.requests.filter((r) => r.path === '/queue' || r.path === '/object_info');
    assert.ok(health.length >= 2);
    assert.ok(
      health.every((r) => r.headers.authorization === 'Bearer comfy-secret-2'),
      'the health checks carry it',
    );
  });
});
