/**
 * `x-gateway-route`: why the scheduler chose the backend (`Lease.route`), beside
 * `x-gateway-backend` on JSON answers and on a stream's head, and in the call's outcome
 * (`CallOutcome.route`, the call log's route) — also when a keep-alive wrote the stream's head
 * before the answer, which can then carry no header.
 *
 * The first tests take the lease's reason from a scheduler whose `acquire` is wrapped to add
 * one (what the proxy does with a route is the subject, not how the scheduler words it); the
 * last one ("spill") needs the scheduler's own route on a paid pick (part "score" of issue 19).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import type { Lease } from '../src/scheduler/index.ts';
import type { CallOutcome } from '../src/stats/call-outcome.ts';
import { startFake } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

/** Every lease the scheduler grants says `route`. */
function routeEveryLease(gw: TestGateway, route: string): void {
  const scheduler = gw.gateway.scheduler;
  const acquire = scheduler.acquire.bind(scheduler);
  scheduler.acquire = async (ticket) => ({ ...(await acquire(ticket)), route }) satisfies Lease;
}

/** Every outcome the gateway records, in order. */
function recordOutcomes(gw: TestGateway): CallOutcome[] {
  const outcomes: CallOutcome[] = [];
  const record = gw.gateway.recordOutcome.bind(gw.gateway);
  gw.gateway.recordOutcome = (o) => {
    outcomes.push(o);
    record(o);
  };
  return outcomes;
}

const messages = [{ role: 'user' as const, content: 'hi' }];
const JSON_TYPE = { 'content-type': 'application/json' };

describe('x-gateway-route', () => {
  test("a JSON answer and a stream's head say why the backend was chosen; so does the outcome", async (t) => {
    const box = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway([{ name: 'box', url: box.url }]);
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    routeEveryLease(gw, 'sticky');
    const outcomes = recordOutcomes(gw);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const json = await client.chat.completions.create({ model: 'm', messages }).withResponse();
    assert.equal(json.response.headers.get('x-gateway-route'), 'sticky');
    assert.equal(json.response.headers.get('x-gateway-backend'), 'box');
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true }).withResponse();
    assert.equal(stream.response.headers.get('x-gateway-route'), 'sticky');
    for await (const chunk of stream.data) void chunk;
    await waitFor(() => outcomes.length === 2, 'two outcomes');
    assert.deepEqual(
      outcomes.map((o) => [o.status, o.route]),
      [
        [200, 'sticky'],
        [200, 'sticky'],
      ],
    );
  });

  test('no reason, no header', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway([{ name: 'box', url: box.url }]);
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const outcomes = recordOutcomes(gw);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-route'), null);
    await res.text();
    assert.equal(outcomes[0].route, undefined);
  });

  test('a stream whose head a keep-alive wrote has no header, but its outcome has the route', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 500 } });
    const gw = await startGateway([{ name: 'box', url: box.url }], { stream_keepalive_s: 0.1 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    routeEveryLease(gw, 'warm');
    const outcomes = recordOutcomes(gw);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({ model: 'm', messages, stream: true }),
    });
    assert.equal(res.headers.get('x-gateway-route'), null, 'the head went out before the backend was known');
    const text = await res.text();
    assert.match(text, /^: waiting for first token\n\n/);
    await waitFor(() => outcomes.length === 1, 'the outcome');
    assert.equal(outcomes[0].route, 'warm');
  });

  test('a reason with characters a header cannot carry goes out in printable ASCII', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway([{ name: 'box', url: box.url }]);
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    routeEveryLease(gw, 'spill: local eta 41 s \u2265 10 s\r\nx-evil: 1');
    for (const stream of [false, true]) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: JSON_TYPE,
        body: JSON.stringify({ model: 'm', messages, stream }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-gateway-route'), 'spill: local eta 41 s ? 10 s??x-evil: 1');
      assert.equal(res.headers.get('x-evil'), null);
      await res.text();
    }
  });

  test('a call that spills to the paid box says so (spill)', async (t) => {
    const local = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 1500 } });
    const paid = await startFake('openrouter', { models: ['m'] });
    const gw = await startGateway(
      [
        { name: 'local', url: local.url, max_concurrent: 1 },
        { name: 'cloud', url: paid.url, paid: true },
      ],
      { spill_after_s: 0, park_timeout_s: 5 },
    );
    t.after(async () => {
      await gw.close();
      await local.close();
      await paid.close();
    });
    const outcomes = recordOutcomes(gw);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const hog = client.chat.completions.create({ model: 'm', messages });
    await waitFor(() => local.inflight === 1, 'the local box busy');
    const spilled = await client.chat.completions.create({ model: 'm', messages }).withResponse();
    assert.equal(spilled.response.headers.get('x-gateway-backend'), 'cloud');
    const route = spilled.response.headers.get('x-gateway-route');
    assert.match(route ?? '', /spill|paid/, `the route says why it went paid: ${route}`);
    await hog;
    await waitFor(() => outcomes.length === 2, 'two outcomes');
    assert.equal(outcomes.find((o) => o.backend === 'cloud')?.route, route);
  });
});
