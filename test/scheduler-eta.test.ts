/**
 * The scheduler's predicted wait reaches the people waiting: a parked stream's keep-alive
 * comment says `eta_s=`, /health's parked list and the console's queue show it, and a call
 * parked too long gets it as its 503's Retry-After, on /v1/chat/completions and, in
 * Anthropic's shape, on /v1/messages.
 *
 * Every test here needs the scheduler's prediction (`queuePosition().etaS`,
 * `snapshot().parked[].etaS`, a park_timeout whose retryAfter is the ETA: part "score" of
 * issue 19); the box's service time is learnt first from a real call, so the ETA is known.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { uiServicesOf } from '../src/app.ts';
import { dashboardModel } from '../src/ui/dashboard-model.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const messages = [{ role: 'user' as const, content: 'hi' }];

/** One box of one slot, its call time learnt from a first (streamed, measurable) call. */
async function oneSlotBox(
  latencyMs: number,
  extra: Parameters<typeof startGateway>[1],
): Promise<{ box: FakeBackend; gw: TestGateway; client: OpenAI }> {
  const box = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs, chunkCount: 20 } });
  const gw = await startGateway([{ name: 'box', url: box.url, max_concurrent: 1 }], extra);
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 20_000 });
  const learn = await client.chat.completions.create({ model: 'm', messages, stream: true });
  for await (const chunk of learn) void chunk;
  return { box, gw, client };
}

describe('the predicted wait of a parked call', () => {
  test("a parked stream's keep-alive says eta_s; /health and the console queue show it", async (t) => {
    const { box, gw, client } = await oneSlotBox(1500, { stream_keepalive_s: 0.15, park_timeout_s: 10 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const hog = client.chat.completions.create({ model: 'm', messages });
    await waitFor(() => box.inflight === 1, 'the slot taken');
    const parked = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages, stream: true }),
    });
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'the stream parked');
    type Parked = { parked: { waiters: { eta_s: number | null }[] } };
    const health = (await (await fetch(`${gw.url}/health`)).json()) as Parked;
    assert.equal(typeof health.parked.waiters[0].eta_s, 'number', `/health: ${JSON.stringify(health.parked)}`);
    assert.ok(health.parked.waiters[0].eta_s! > 0);
    const queue = dashboardModel(uiServicesOf(gw.gateway)).queue;
    assert.equal(typeof queue[0].etaS, 'number', 'the console queue row');
    const text = await (await parked).text();
    assert.match(text, /^: queued position=1 waited_s=\d+ eta_s=\d+(?:\.\d)?\n\n/);
    assert.ok(text.trimEnd().endsWith('data: [DONE]'));
    await hog;
  });

  test('a call parked too long is told its predicted wait in Retry-After, OpenAI and Anthropic shaped', async (t) => {
    const { box, gw, client } = await oneSlotBox(4000, { park_timeout_s: 0.5 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'none', maxRetries: 0, timeout: 20_000 });
    const hog = client.chat.completions.create({ model: 'm', messages });
    await waitFor(() => box.inflight === 1, 'the slot taken');
    const [openai, messagesApi] = await Promise.allSettled([
      client.chat.completions.create({ model: 'm', messages }),
      anthropic.messages.create({ model: 'm', max_tokens: 50, messages }),
    ]);
    assert.equal(openai.status, 'rejected');
    const openaiError = (openai as PromiseRejectedResult).reason;
    assert.ok(openaiError instanceof OpenAI.APIError);
    assert.equal(openaiError.status, 503);
    assert.equal((openaiError.error as { code?: string }).code, 'park_timeout');
    const openaiRetry = Number(openaiError.headers?.get('retry-after'));
    // the box answers in about 4 s and has just begun: the wait left is some 3.5 s (the old fixed answer was 2)
    assert.ok(Number.isInteger(openaiRetry) && openaiRetry >= 3 && openaiRetry <= 10, `Retry-After ${openaiRetry}`);

    assert.equal(messagesApi.status, 'rejected');
    const anthropicError = (messagesApi as PromiseRejectedResult).reason;
    assert.ok(anthropicError instanceof Anthropic.APIError);
    assert.equal(anthropicError.status, 503);
    assert.equal((anthropicError.error as { type?: string }).type, 'error', "Anthropic's error shape");
    const anthropicRetry = Number(anthropicError.headers?.get('retry-after'));
    assert.ok(Number.isInteger(anthropicRetry), `Retry-After: ${anthropicRetry}`);
    assert.ok(anthropicRetry >= 3 && anthropicRetry <= 10, `Retry-After: ${anthropicRetry}`);
    await hog;
  });
});
