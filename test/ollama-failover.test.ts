/**
 * One Ollama call across backends of both kinds: the wire format is chosen per attempt, so a
 * call that fails on an Ollama server (passthrough) fails over to a chat backend (translated)
 * before anything reached the client, and the call log has the call's one row.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ollama } from 'ollama';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startOllamaFake, type OllamaFake } from './fakes/ollama-server.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

describe('an Ollama call fails over from an Ollama server to a chat backend', () => {
  let box: OllamaFake;
  let gpu: FakeBackend;
  let gw: TestGateway;

  before(async () => {
    box = await startOllamaFake();
    gpu = await startFake('llamacpp', { models: ['qwen3-8b'] });
    gw = await startGateway(
      [
        { name: 'box', url: box.url, type: 'ollama' },
        { name: 'gpu', url: gpu.url },
      ],
      { virtual_models: { both: { box: 'llama3.2:latest', gpu: 'qwen3-8b' } } },
    );
    // the gateway knows gpu's speed now: the never-measured box is the scheduler's first choice
    const warm = await fetch(`${gw.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'gpu/qwen3-8b', messages: [{ role: 'user', content: 'warm' }], stream: false }),
    });
    assert.equal(warm.status, 200);
    await box.close(); // gone without discovery noticing: the next attempt there is refused
  });
  after(async () => {
    await gw?.close();
    await gpu?.close();
  });

  test('streamed and whole, the client sees one clean answer from the chat backend', async () => {
    const client = new Ollama({ host: gw.url });
    const stream = await client.chat({ model: 'both', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const part of stream) text += part.message.content;
    assert.ok(text.startsWith('tok0'), text);
    const whole = await client.generate({ model: 'both', prompt: 'hi' });
    assert.ok(whole.response.startsWith('tok0'));
    assert.equal(whole.model, 'both', 'answered with the name the client asked for');
    const box = gw.gateway.registry.get('box')!;
    assert.ok(box.consecutiveFailures > 0 || !box.healthy, 'the Ollama server was tried first and failed');
    const toGpu = gpu.requests.filter((r) => r.path === '/v1/chat/completions');
    assert.equal(toGpu.at(-1)!.body.model, 'qwen3-8b');
    await waitFor(() => gw.gateway.scheduler.snapshot().backends.every((b) => b.inflight === 0), 'slots back');
  });

  test('the call log has one row per call, named for the Ollama endpoint, with its tokens', async () => {
    await gw.gateway.callLog.flush();
    const res = await fetch(`${gw.url}/admin/api/calls?limit=10`);
    const rows = ((await res.json()) as { data: any[] }).data;
    const ollamaRows = rows.filter((r) => String(r.endpoint).startsWith('ollama-'));
    assert.deepEqual(ollamaRows.map((r) => r.endpoint).sort(), ['ollama-chat', 'ollama-chat', 'ollama-generate']);
    for (const row of ollamaRows) {
      assert.equal(row.status, 200);
      assert.equal(row.backend, 'gpu');
      assert.ok(row.completion_tokens > 0);
    }
  });
});
