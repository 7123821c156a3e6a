/**
 * A GPU shared by a llama-swap and a ComfyUI (`gpu_group`), over real sockets: with one slot
 * on the group, a chat call waits while an image job holds the card and runs after it; an
 * image job waits behind a chat call the same way; when the card's work switches kind the
 * gateway asks llama-swap to unload (to media) and ComfyUI to free (back to LLM), as opted in.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { FAST_COMFY, sd15Models, settle, submitText } from './helpers/media-service.ts';
import { waitFor } from './helpers/wait.ts';

describe('a gpu_group shared by an LLM backend and a ComfyUI', () => {
  let swap: FakeBackend | undefined;
  let comfy: ComfyFake | undefined;
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    await swap?.close();
    await comfy?.close();
    gw = undefined;
  });

  async function card(
    group: { unload_llm?: boolean; free_media?: boolean } = {},
  ): Promise<{ g: TestGateway; client: OpenAI }> {
    swap = await startFake('llamaswap', { models: ['qwen'], knobs: { tokensPerSecond: 200, chunkCount: 10 } });
    comfy = await startComfyFake({ knobs: { stepMs: 60, steps: 6 } });
    gw = await startGateway(
      [
        { name: 'swap', url: swap.url, gpu_group: 'box1' },
        { name: 'comfy', url: comfy.url, type: 'comfyui', gpu_group: 'box1', ...FAST_COMFY },
      ],
      { image_models: sd15Models(['comfy']), gpu_groups: { box1: { max_concurrent: 1, ...group } } },
    );
    return { g: gw, client: new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 }) };
  }

  test('a chat call parks while an image job holds the card, and runs once it is done', async () => {
    const { g, client } = await card();
    const job = await submitText(g, 'sd15');
    await waitFor(() => comfy!.prompts.some((p) => p.status === 'running'), 'the image job runs');
    const chat = client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }] });
    await waitFor(() => g.gateway.scheduler.snapshot().parked.length === 1, 'the chat call parks');
    assert.equal(swap!.inflight, 0, 'the LLM server is not touched while the card is busy');
    const done = await settle(g, job.id);
    const answer = await chat;
    assert.equal(done.status, 'done');
    assert.ok(answer.choices[0].message.content);
    const running = comfy!.prompts[0];
    assert.ok(running.endedAt !== undefined);
    const group = g.gateway.scheduler.snapshot().groups.find((x) => x.name === 'box1');
    assert.deepEqual(
      { inflight: group?.inflight, cap: group?.cap, members: group?.members.sort() },
      { inflight: 0, cap: 1, members: ['comfy', 'swap'] },
    );
  });

  test('an image job parks behind a chat stream on the card', async () => {
    const { g, client } = await card();
    swap!.setKnobs({ tokensPerSecond: 20, chunkCount: 12 });
    const stream = await client.chat.completions.create({
      model: 'qwen',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const job = await submitText(g, 'sd15');
    assert.equal(
      g.gateway.media.view(job.id, { owner: 'user:1', admin: false, allow: [], source: 's', userId: null })?.status,
      'queued',
    );
    let chunks = 0;
    for await (const _ of stream) {
      if (++chunks === 6) assert.equal(comfy!.prompts.length, 0, 'mid-stream, ComfyUI has not been sent the job');
    }
    assert.ok(chunks > 6);
    assert.equal((await settle(g, job.id)).status, 'done');
    assert.equal(comfy!.prompts.length, 1);
  });

  test('switching the card to media unloads llama-swap; back to LLM frees ComfyUI (both opted in)', async () => {
    const { g, client } = await card({ unload_llm: true, free_media: true });
    await client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'first' }] });
    assert.equal((await settle(g, (await submitText(g, 'sd15')).id)).status, 'done');
    await waitFor(
      () => swap!.requests.some((r) => r.method === 'POST' && r.path === '/api/models/unload'),
      'llama-swap asked to unload',
    );
    await client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'again' }] });
    await waitFor(
      () => comfy!.requests.some((r) => r.method === 'POST' && r.path.endsWith('/free')),
      'ComfyUI asked to free its memory',
    );
    const free = comfy!.requests.find((r) => r.path.endsWith('/free'))!;
    assert.deepEqual(free.body, { unload_models: true, free_memory: true });
  });

  test('without the opt-ins nothing is unloaded or freed', async () => {
    const { g, client } = await card();
    await client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'first' }] });
    assert.equal((await settle(g, (await submitText(g, 'sd15')).id)).status, 'done');
    await client.chat.completions.create({ model: 'qwen', messages: [{ role: 'user', content: 'again' }] });
    assert.equal(
      swap!.requests.some((r) => r.path.includes('unload')),
      false,
    );
    assert.equal(
      comfy!.requests.some((r) => r.path.endsWith('/free')),
      false,
    );
  });
});
