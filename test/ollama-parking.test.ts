/**
 * Ollama NDJSON streams while the fleet is busy or broken: a parked call's keep-alives are
 * whitespace a line parser skips (no SSE comments, no blank lines), a park that runs out is a
 * 503 in Ollama's shape, and a backend that breaks mid-stream ends it with an `{"error"}` line.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ollama } from 'ollama';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { STATUS_CLIENT_CLOSED } from '../src/stats/record.ts';

describe('Ollama streams on a busy or broken fleet', () => {
  let gpu: FakeBackend;
  let gw: TestGateway;
  const inflight = () => gw.gateway.scheduler.snapshot().backends.find((b) => b.name === 'gpu')?.inflight;
  const chat = (model: string, stream: boolean) =>
    fetch(`${gw.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], stream }),
    });

  before(async () => {
    gpu = await startFake('llamacpp', { models: ['qwen3-8b'] });
    gw = await startGateway([{ name: 'gpu', url: gpu.url, local: true, max_concurrent: 1 }], {
      stream_keepalive_s: 0.1,
      virtual_models: { impatient: 'gpu/qwen3-8b' },
      alias_park: { impatient: 0.3 },
    });
  });
  after(async () => {
    await gw?.close();
    await gpu?.close();
  });

  /** Holds the one slot with a slow stream until the returned promise's body is read. */
  const holdTheSlot = async () => {
    gpu.setKnobs({ chunkCount: 12, tokensPerSecond: 10 });
    const busy = await chat('qwen3-8b', true);
    await waitFor(() => inflight() === 1, 'the slot is taken');
    return busy;
  };

  test('a parked stream gets whitespace keep-alives, then lines every client parses', async () => {
    const busy = await holdTheSlot();
    const parked = chat('qwen3-8b', true);
    const client = new Ollama({ host: gw.url });
    const viaClient = client.chat({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'x' }], stream: true });
    const raw = await (await parked).text();
    await busy.text();
    assert.match(raw, /^ +\{/, 'spaces went out while the call waited');
    assert.ok(!raw.includes(': queued') && !raw.includes('\n\n'), 'no SSE comment, no blank line');
    const lines = raw.split('\n').filter((l) => l !== '');
    for (const line of lines) JSON.parse(line); // every line is one JSON object, leading spaces and all
    assert.equal(JSON.parse(lines.at(-1)!).done, true);
    let text = '';
    for await (const part of await viaClient) text += part.message.content;
    assert.ok(text.startsWith('tok0'));
    await waitFor(() => inflight() === 0, 'every slot back');
  });

  test("a park that runs out: 503 with Retry-After in Ollama's shape (whole answer)", async () => {
    const busy = await holdTheSlot();
    const res = await chat('impatient', false);
    assert.equal(res.status, 503);
    assert.ok(res.headers.get('retry-after'));
    const body = (await res.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), ['error']);
    await busy.text();
    await waitFor(() => inflight() === 0, 'every slot back');
  });

  test('a stream refused after its head went out ends with an {"error"} line', async () => {
    const busy = await holdTheSlot();
    const raw = await (await chat('impatient', true)).text();
    await busy.text();
    const lines = raw.split('\n').filter((l) => l.trim() !== '');
    assert.equal(lines.length, 1, raw);
    assert.equal(typeof JSON.parse(lines[0]!).error, 'string');
    await waitFor(() => inflight() === 0, 'every slot back');
  });

  test('a parked stream the client leaves: its ticket goes, one row, the slot comes back', async () => {
    const busy = await holdTheSlot();
    const leave = new AbortController();
    const parked = await fetch(`${gw.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'bye' }] }),
      signal: leave.signal,
    });
    const id = parked.headers.get('x-request-id')!;
    assert.ok(id, 'the head went out with the first keep-alive');
    leave.abort();
    await parked.body?.cancel().catch(() => {});
    await busy.text();
    await waitFor(() => inflight() === 0, 'every slot back');
    await gw.gateway.callLog.flush();
    const rows = gw.gateway.callLog.recent({ limit: 1000 }).filter((r) => r.request_id === id);
    assert.equal(rows.length, 1, 'one row for the abandoned call');
    assert.equal(rows[0]!.status, STATUS_CLIENT_CLOSED);
  });

  test('a backend that breaks mid-stream: the client sees an error, the slot comes back', async () => {
    gpu.setKnobs({ chunkCount: 8, tokensPerSecond: 0, dropAfterChunks: 3 });
    try {
      const raw = await (await chat('qwen3-8b', true)).text();
      const lines = raw.split('\n').filter((l) => l.trim() !== '');
      const last = JSON.parse(lines.at(-1)!);
      assert.equal(typeof last.error, 'string', raw);
      assert.ok(!lines.some((l) => JSON.parse(l).done === true), 'never a made-up done');
      const client = new Ollama({ host: gw.url });
      await assert.rejects(async () => {
        const messages = [{ role: 'user', content: 'x' }];
        for await (const _ of await client.chat({ model: 'qwen3-8b', messages, stream: true })) {
          /* reading */
        }
      });
    } finally {
      gpu.setKnobs({ dropAfterChunks: -1 });
    }
    await waitFor(() => inflight() === 0, 'every slot back');
  });
});
