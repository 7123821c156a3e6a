/**
 * A ComfyUI backend in discovery, against the fake ComfyUI over sockets: up with its
 * inventory read from /object_info (in /health), one prompt at a time by default, marked down
 * `exec_stuck` when its executor stops taking the queue's head, back up when it moves again;
 * its inventory kept while it is down.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { submitPrompt } from './fakes/comfyui-client.ts';
import { defaultWorkflow } from './fakes/comfyui-workflows.ts';
import { FAKE_MODELS } from './fakes/comfyui-nodes.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

describe('a ComfyUI backend in discovery', () => {
  let comfy: ComfyFake;
  let gw: TestGateway;

  before(async () => {
    comfy = await startComfyFake();
    // a short stuck_after_s so that two probes a few ms apart can decide
    gw = await startGateway([{ name: 'comfy', url: comfy.url, type: 'comfyui', stuck_after_s: 0.05 }]);
  });
  after(async () => {
    await gw?.close();
    await comfy?.close();
  });

  const health = async () =>
    (await (await fetch(`${gw.url}/health`)).json()) as {
      backends: Record<
        string,
        {
          healthy: boolean;
          max_concurrent: number;
          error: { kind: string; detail: string } | null;
          inventory: Record<string, number> | null;
        }
      >;
    };

  test('up, one prompt at a time, with its inventory in /health; probes never submit a prompt', async () => {
    const b = (await health()).backends.comfy;
    assert.equal(b.healthy, true);
    assert.equal(b.max_concurrent, 1);
    assert.equal(b.inventory?.checkpoints, FAKE_MODELS.checkpoints.length);
    assert.equal(b.inventory?.loras, FAKE_MODELS.loras.filter((l) => l !== 'None').length);
    assert.ok((b.inventory?.node_classes ?? 0) > 10);
    assert.deepEqual(gw.gateway.comfy.inventory('comfy')?.checkpoints, [...FAKE_MODELS.checkpoints].sort());
    assert.ok(
      comfy.requests.some((r) => r.path === '/queue'),
      'the queue is read',
    );
    assert.equal(comfy.requests.filter((r) => r.method === 'POST').length, 0, 'health never sends a prompt');
  });

  test('a stuck executor marks it down exec_stuck; inventory kept; moving again brings it back', async () => {
    comfy.setKnobs({ stuck: true });
    const submitted = await submitPrompt(comfy, defaultWorkflow('stuck one'));
    assert.equal(submitted.status, 200);
    await gw.gateway.discovery.probe('comfy');
    await new Promise((r) => setTimeout(r, 80));
    await gw.gateway.discovery.probe('comfy');
    const down = (await health()).backends.comfy;
    assert.equal(down.healthy, false);
    assert.equal(down.error?.kind, 'exec_stuck');
    assert.match(down.error?.detail ?? '', /exec_stuck/);
    assert.ok(down.inventory, 'the inventory stays while it is down');
    comfy.setKnobs({ stuck: false });
    await waitFor(
      () => comfy.prompts.every((p) => p.status !== 'pending' && p.status !== 'running'),
      'the fake ran the queued prompt',
    );
    await gw.gateway.discovery.probe('comfy');
    assert.equal((await health()).backends.comfy.healthy, true);
  });
});
