/**
 * A gateway with a call log worth looking at, for the LLM calls and Statistics tabs: a fake
 * llama.cpp box and a fake OpenRouter (paid, with prompt-cache hits) over real sockets, body
 * capture on, a few real calls through /v1 (streamed, not, refused) and, optionally, seeded
 * history (helpers/calls-seed.ts).
 */
import { startFake, type FakeBackend } from '../fakes/index.ts';
import { seedCallLog, type SeedOptions } from './calls-seed.ts';
import { startGateway, type TestGateway } from './gateway.ts';
import { waitFor } from './wait.ts';

export const MASTER_KEY = 'calls-rig-master-key';

export interface CallsRig {
  gw: TestGateway;
  url: string;
  gpu: FakeBackend;
  cloud: FakeBackend;
  /** Ids of the real calls: a streamed chat, a non-streamed paid one, a refused one. */
  ids: { streamed: number; json: number; refused: number };
  close(): Promise<void>;
}

export async function chat(url: string, body: object, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER_KEY}`, ...headers },
  });
}

export async function startCallsRig(opts: { seed?: SeedOptions; captureBodies?: boolean } = {}): Promise<CallsRig> {
  const gpu = await startFake('llamacpp', { models: ['qwen3-8b'] });
  const cloud = await startFake('openrouter', { models: ['acme/chat-large'] });
  const gw = await startGateway(
    [
      { name: 'gpu', url: gpu.url },
      { name: 'or', url: cloud.url, paid: true },
    ],
    { api_key: MASTER_KEY, capture_bodies: opts.captureBodies ?? true, stats_flush_ms: 50 },
  );
  const log = gw.gateway.callLog;
  if (opts.seed) await seedCallLog(log, opts.seed);

  cloud.setKnobs({ cachedPromptTokens: 40 });
  await (
    await chat(
      gw.url,
      { model: 'or/acme/chat-large', messages: [{ role: 'user', content: 'word '.repeat(120) }] },
      { 'x-source': 'n8n' },
    )
  ).text();
  await (
    await chat(gw.url, {
      model: 'gpu/qwen3-8b',
      stream: true,
      messages: [{ role: 'user', content: 'Say hi <b>bold</b>' }],
    })
  ).text();
  await (await chat(gw.url, { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] })).text();
  const find = (f: Parameters<typeof log.recent>[0]) => log.recent({ ...f, limit: 1 })[0]?.id ?? 0;
  const ids = () => ({
    streamed: find({ backend: 'gpu' }),
    json: find({ backend: 'or' }),
    refused: find({ backend: '(refused)', model: 'no-such-model' }),
  });
  await waitFor(() => Object.values(ids()).every((id) => id > 0), 'the rig calls on record');
  await log.flush();
  return {
    gw,
    url: gw.url,
    gpu,
    cloud,
    ids: ids(),
    close: async () => {
      await gw.close();
      await gpu.close();
      await cloud.close();
    },
  };
}
