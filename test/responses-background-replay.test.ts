/**
 * A background run read back with the official `openai` SDK's `responses.retrieve(id, {stream:
 * true, starting_after})`, on a native and on a translated backend: after the run, the stored
 * events after that sequence number; during it, those so far and then each as it comes, ending
 * with the terminal event. Every event that carries a Response carries the id create gave.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startNativeResponsesFake, type NativeResponsesFake } from './fakes/responses-native.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'gw-master-bg-replay';
const KEY = 'sk-native-replay-0123456789';

describe('background replay with starting_after', () => {
  let native: NativeResponsesFake;
  let local: FakeBackend;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    native = await startNativeResponsesFake({ apiKey: KEY });
    local = await startFake('llamacpp', { models: ['qwen3-8b'] });
    gw = await startGateway(
      [
        { name: 'nat', url: native.url, responses: 'native', api_key: KEY },
        { name: 'local', url: local.url },
      ],
      { api_key: MASTER, virtual_models: { n: { nat: 'gpt-5.2' }, t: { local: 'qwen3-8b' } } },
    );
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0, timeout: 10_000 });
  });
  after(async () => {
    await gw?.close();
    await native?.close();
    await local?.close();
  });

  type Seen = { type: string; seq: number; id?: string };
  const read = async (stream: AsyncIterable<OpenAI.Responses.ResponseStreamEvent>) => {
    const seen: Seen[] = [];
    for await (const e of stream) {
      seen.push({ type: e.type, seq: e.sequence_number, ...('response' in e ? { id: e.response.id } : {}) });
    }
    return seen;
  };
  const finished = (id: string) =>
    waitFor(async () => (await client.responses.retrieve(id)).status === 'completed', 'the run completed', 10_000);

  for (const model of ['n', 't']) {
    test(`${model === 'n' ? 'native' : 'translated'}: replay after the run, whole and after a sequence number`, async () => {
      const { id } = await client.responses.create({ model, input: 'tell me', background: true });
      await finished(id);
      const all = await read(await client.responses.retrieve(id, { stream: true }));
      assert.ok(all.length >= 4, 'created, deltas, completed');
      assert.deepEqual(
        all.map((e) => e.seq),
        [...all.keys()].map((i) => all[0]!.seq + i),
        'in order, none missing',
      );
      assert.equal(all.at(-1)!.type, 'response.completed');
      assert.deepEqual(new Set(all.flatMap((e) => (e.id ? [e.id] : []))), new Set([id]), 'one id');
      const cut = all[1]!.seq;
      const rest = await read(await client.responses.retrieve(id, { stream: true, starting_after: cut }));
      assert.deepEqual(
        rest,
        all.filter((e) => e.seq > cut),
        'exactly the events after it',
      );
    });
  }

  test('native: a follower joining mid-run with starting_after gets each later event once, to the end', async () => {
    native.setEventDelay(40);
    try {
      const { id } = await client.responses.create({ model: 'n', input: 'slowly', background: true });
      await waitFor(async () => (await client.responses.retrieve(id)).status === 'in_progress', 'running', 10_000);
      const live = await read(await client.responses.retrieve(id, { stream: true, starting_after: 1 }));
      assert.equal(live[0]!.seq, 2, 'from the one after');
      assert.deepEqual(
        live.map((e) => e.seq),
        [...live.keys()].map((i) => 2 + i),
        'in order, none twice',
      );
      assert.equal(live.at(-1)!.type, 'response.completed');
      assert.deepEqual(new Set(live.flatMap((e) => (e.id ? [e.id] : []))), new Set([id]));
      const stored = await read(await client.responses.retrieve(id, { stream: true, starting_after: 1 }));
      assert.deepEqual(stored, live, 'the stored replay is what the follower saw');
    } finally {
      native.setEventDelay(0);
    }
  });
});
