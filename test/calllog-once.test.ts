/**
 * The call log counts each call once, over real sockets: a soak of a few hundred calls on
 * chat completions, Anthropic messages and Responses (streamed or not, some in the background),
 * against a backend with two slots, so most of them park. The client hangs up at random: before
 * the gateway dispatched the call, while it is parked, while it streams; some calls are refused
 * (unknown model), some wait past the park time, some of them after a keep-alive opened their
 * stream, some fail over from a failing backend, some pass through to an Anthropic backend.
 * Once every call has ended, the call log holds exactly one row per call, no request id twice,
 * and the quota counter counts each call that reached the scheduler once. A client sending the
 * same x-request-id for distinct calls gets a row per call, each under the id echoed to it.
 * Then the two guards on their own: the call log's (a second record of an id makes no row) and
 * the route's once-only settle of a call's outcome (runProxiedCall over a proxy that misbehaves
 * on purpose).
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import { GatewayError } from '../src/errors.ts';
import { Callers } from '../src/routes/caller.ts';
import { installErrorHandlers } from '../src/routes/error-handler.ts';
import { runProxiedCall } from '../src/routes/proxied-call.ts';
import { CallLog, type CallRecord } from '../src/stats/call-log.ts';
import { OutcomeOnce } from '../src/stats/outcome-once.ts';
import { startOfUtcDay } from '../src/stats/period.ts';
import { countsTowardQuota } from '../src/stats/quota.ts';
import { RecentIds } from '../src/stats/recent-ids.ts';
import { REQUEST_ID, RequestIds } from '../src/stats/request-ids.ts';
import { REFUSED_BACKEND } from '../src/stats/record.ts';
import type { CallOutcome } from '../src/stats/call-outcome.ts';
import type { ProxyCall } from '../src/upstream/proxy-call.ts';
import { ANTHROPIC_FAKE_API_KEY, startAnthropicFake, startFake } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { callRecord } from './helpers/call-record.ts';
import { prng } from './helpers/prng.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'master-key-0123456789';
/** Served by an Anthropic backend: /v1/messages to it passes through untranslated. */
const CLAUDE = 'a/claude-sonnet-4-5-20250929';
const CALLS = 320;
const WORKERS = 16;

type Endpoint = 'chat' | 'messages' | 'responses' | 'background';
/** When the client hangs up: never, soon after sending (before dispatch or while parked), after the first bytes. */
type Fate = 'complete' | 'early' | 'parked' | 'streaming' | 'unknown_model';

interface Plan {
  id: string;
  endpoint: Endpoint;
  stream: boolean;
  fate: Fate;
  /** `v/m` pinned; `m`, which a failing backend serves too (failover); the slow backend's, whose park runs out. */
  model: 'v/m' | 'm' | 's/slow' | 'l/long' | typeof CLAUDE;
  /** Ms after the request was sent that an early or parked hang-up happens. */
  delayMs: number;
}

function planCalls(seed: number): Plan[] {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  return Array.from({ length: CALLS }, (_, i) => {
    const endpoint = random() < 0.06 ? 'background' : pick(['chat', 'messages', 'responses'] as const);
    const r = random();
    const fate: Fate =
      r < 0.04 ? 'unknown_model' : r < 0.14 ? 'early' : r < 0.36 ? 'parked' : r < 0.5 ? 'streaming' : 'complete';
    const stream = endpoint === 'background' ? false : fate === 'streaming' ? true : random() < 0.5;
    // a 'parked' background run is cancelled soon after its create answered, while it still waits or runs
    const delayMs =
      fate === 'early'
        ? Math.floor(random() * 3)
        : endpoint === 'background'
          ? Math.floor(random() * 30)
          : 20 + Math.floor(random() * 400);
    const m = random();
    const cancelled = endpoint === 'background' && fate === 'parked';
    // a run to be cancelled goes to a box slow to answer, so the cancel finds it still running
    const model = cancelled
      ? 'l/long'
      : endpoint === 'messages' && m > 0.7
        ? CLAUDE
        : m < 0.12 && endpoint !== 'background'
          ? 's/slow'
          : m < 0.45
            ? 'm'
            : 'v/m';
    return { id: `soak-${seed}-${i}`, endpoint, stream, fate, delayMs, model };
  });
}

function requestOf(plan: Plan, key: string): { path: string; headers: Record<string, string>; body: string } {
  const model = plan.fate === 'unknown_model' ? 'nope/none' : plan.model;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': plan.id };
  const { stream } = plan;
  const messages = [{ role: 'user', content: `call ${plan.id}` }];
  if (plan.endpoint === 'messages') {
    Object.assign(headers, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    return { path: '/v1/messages', headers, body: JSON.stringify({ model, max_tokens: 64, stream, messages }) };
  }
  headers.authorization = `Bearer ${key}`;
  if (plan.endpoint === 'chat') {
    return { path: '/v1/chat/completions', headers, body: JSON.stringify({ model, stream, messages }) };
  }
  const background = plan.endpoint === 'background';
  const input = messages[0].content;
  return { path: '/v1/responses', headers, body: JSON.stringify({ model, stream, background, input }) };
}

/**
 * One call on its own connection: sends the whole request, then hangs up as planned, else reads
 * the answer to the end. Resolves with the status (0 when the client hung up before a head came)
 * and, for a background create, the response id.
 */
function send(url: string, plan: Plan, key: string): Promise<{ status: number; responseId?: string }> {
  const { path, headers, body } = requestOf(plan, key);
  const target = new URL(path, url);
  return new Promise((resolve, reject) => {
    let status = 0;
    let hungUp = false;
    const req = httpRequest({ host: target.hostname, port: target.port, path, method: 'POST', headers, agent: false });
    const hangUp = () => {
      if (hungUp) return;
      hungUp = true;
      req.destroy();
      resolve({ status });
    };
    req.on('error', (err) => (hungUp ? undefined : reject(err)));
    req.on('response', (res: IncomingMessage) => {
      status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        // keep-alive comments come while the call is parked: hang up on the first event of the answer
        if (plan.fate === 'streaming' && /^(data|event):/m.test(chunk.toString('utf8'))) hangUp();
      });
      res.on('error', () => undefined);
      res.on('end', () => {
        if (hungUp) return;
        hungUp = true;
        const text = Buffer.concat(chunks).toString('utf8');
        const created = plan.endpoint === 'background' && status === 200;
        resolve({ status, responseId: created ? (JSON.parse(text) as { id: string }).id : undefined });
      });
    });
    // the request is on the wire before any hang-up, so the gateway sees every call
    req.end(body, () => {
      // a background create is read to its end (the run goes on anyway): 'parked' ones are cancelled then
      const hangsUp = plan.fate === 'early' || (plan.fate === 'parked' && plan.endpoint !== 'background');
      if (hangsUp) setTimeout(hangUp, plan.delayMs);
    });
  });
}

/** Sends every call, `WORKERS` at a time; a 'parked' background run is cancelled after its create. */
async function soak(gw: TestGateway, plans: Plan[], key: string): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < plans.length) {
      const plan = plans[next++];
      const { responseId } = await send(gw.url, plan, key);
      if (!responseId || plan.fate !== 'parked') continue;
      await new Promise((r) => setTimeout(r, plan.delayMs));
      const headers = { authorization: `Bearer ${key}` };
      await (await fetch(`${gw.url}/v1/responses/${responseId}/cancel`, { method: 'POST', headers })).text();
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
}

/** Nothing parked, nothing in flight. */
function settled(gw: TestGateway): boolean {
  const snap = gw.gateway.scheduler.snapshot();
  return snap.parked.length === 0 && snap.backends.every((b) => b.inflight === 0);
}

describe('the call log counts each call once', () => {
  test('a soak with hang-ups before dispatch, while parked and while streaming: one row per call', async (t) => {
    const knobs = { latencyMs: 15, tokensPerSecond: 400, chunkCount: 12 };
    const fake = await startFake('vllm', { models: ['m'], knobs });
    const slow = await startFake('vllm', { models: ['slow'], knobs: { latencyMs: 500, chunkCount: 2 } });
    const failing = await startFake('vllm', { models: ['m'], knobs: { errorStatus: 500 } });
    const long = await startFake('vllm', { models: ['long'], knobs: { latencyMs: 3000, chunkCount: 2 } });
    const claude = await startAnthropicFake({ knobs: { latencyMs: 30, tokensPerSecond: 300, chunkCount: 8 } });
    const backends = [
      { name: 'v', url: fake.url, max_concurrent: 2 },
      { name: 's', url: slow.url, max_concurrent: 1 },
      { name: 'f', url: failing.url, max_concurrent: 4 },
      { name: 'l', url: long.url, max_concurrent: 16 },
      { name: 'a', url: claude.url, type: 'anthropic' as const, api_key: ANTHROPIC_FAKE_API_KEY, max_concurrent: 1 },
    ];
    const gw = await startGateway(backends, {
      api_key: MASTER,
      park_timeout_s: 5,
      // the slow backend's calls wait past their park time, some after a keep-alive opened their stream
      alias_park: { 's/slow': 0.35 },
      stream_keepalive_s: 0.15,
      async_park_timeout_s: 30,
      max_parked: 1000,
    });
    t.after(async () => {
      await gw.close();
      for (const backend of [fake, slow, failing, long, claude]) await backend.close();
    });
    const admin = { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ name: 'soak' });
    const user = (await (
      await fetch(`${gw.url}/admin/api/users`, { method: 'POST', headers: admin, body })
    ).json()) as {
      id: number;
      key: string;
    };
    const plans = planCalls(18);
    const log = gw.gateway.callLog;

    await soak(gw, plans, user.key);
    const allOnRecord = () => settled(gw) && log.recent({ limit: 1000 }).length >= CALLS;
    await waitFor(allOnRecord, 'every call ended, on record', 15_000);
    await new Promise((r) => setTimeout(r, 300)); // a late second row of any call would show by now
    await log.flush();

    const rows = log.recent({ limit: 1000 });
    const ids = rows.map((r) => r.request_id);
    const repeated = [...new Set(ids.filter((id, i) => ids.indexOf(id) !== i))];
    assert.deepEqual(repeated, [], 'no request id appears twice');
    assert.equal(rows.length, CALLS, 'one row per call sent');
    // every foreground call is on record under its own id; each background run is the gateway's own call
    const foreground = plans.filter((p) => p.endpoint !== 'background').map((p) => p.id);
    const logged = new Set(ids);
    assert.deepEqual(
      foreground.filter((id) => !logged.has(id)),
      [],
      'every foreground call has its row',
    );
    const backgroundRows = rows.filter((r) => !foreground.includes(r.request_id));
    assert.equal(backgroundRows.length, plans.length - foreground.length, 'one row per background run');
    assert.ok(
      backgroundRows.some((r) => r.status === 499),
      'some background runs were cancelled',
    );

    // the soak did take every path: parked hang-ups (499 with no backend), stream hang-ups, park timeouts
    const byReason = (reason: string) => rows.filter((r) => r.reason === reason).length;
    assert.ok(byReason('client_closed_while_parked') > 0, 'some calls were abandoned while parked');
    assert.ok(
      rows.some((r) => r.status === 499 && r.backend === 'v'),
      'some calls were abandoned while answered',
    );
    assert.ok(byReason('park_timeout') > 0, 'some calls waited past the park time');
    assert.ok(byReason('unknown_model') > 0, 'some calls were refused at the gate');
    assert.ok(failing.requests.length > 0, 'some calls were tried on the failing backend (failed over or got its 500)');
    assert.ok(rows.filter((r) => r.status === 200).length > CALLS / 4, 'many calls were answered');
    assert.ok(
      rows.some((r) => r.backend === 'a' && r.status === 200),
      'some messages passed through to Anthropic',
    );

    // the quota counter counts each call that reached the scheduler once
    const counted = rows.filter((r) => countsTowardQuota(r)).length;
    assert.equal(log.quotas.requestsSince(user.id, startOfUtcDay(Date.now())), counted, 'quota == calls past the gate');
  });

  test('a streamed call refused after a keep-alive opened its stream has one row', async (t) => {
    const fake = await startFake('vllm', { models: ['m'], knobs: { latencyMs: 900 } });
    const gw = await startGateway([{ name: 'v', url: fake.url, max_concurrent: 1 }], {
      park_timeout_s: 0.4,
      stream_keepalive_s: 0.1,
    });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const post = (id: string, stream: boolean) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: JSON.stringify({ model: 'v/m', stream, messages: [{ role: 'user', content: 'x' }] }),
      });
    const busy = post('busy', false);
    await waitFor(() => fake.requests.length === 1, 'the slot is taken');
    const parked = await post('parked', true);
    assert.equal(parked.status, 200, 'a keep-alive opened the stream');
    const text = await parked.text();
    assert.match(text, /park_timeout|stayed busy/, 'the refusal came as an event');
    await (await busy).text();
    await waitFor(() => settled(gw), 'every call ended');
    await new Promise((r) => setTimeout(r, 100));
    const rows = gw.gateway.callLog.recent({ limit: 100 });
    const seen = rows.map((r) => `${r.request_id} ${r.status} ${r.reason}`).sort();
    assert.deepEqual(seen, ['busy 200 null', 'parked 503 park_timeout']);
  });
});

describe('a client repeating its own x-request-id', () => {
  test('distinct calls sharing an id get a row each, under the id each was echoed', async (t) => {
    const fake = await startFake('vllm', { models: ['m'], knobs: { latencyMs: 150 } });
    const gw = await startGateway([{ name: 'v', url: fake.url }], { api_key: MASTER });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const admin = { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' };
    const created = await fetch(`${gw.url}/admin/api/users`, { method: 'POST', headers: admin, body: '{"name":"u"}' });
    const user = (await created.json()) as { id: number; key: string };
    const post = async (stream: boolean) => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json', 'x-request-id': 'same' },
        body: JSON.stringify({ model: 'v/m', stream, messages: [{ role: 'user', content: 'x' }] }),
      });
      await res.text();
      return { status: res.status, id: res.headers.get('x-request-id')! };
    };
    // two at once (the first still running when the second comes), then two after they ended
    const calls = [...(await Promise.all([post(false), post(true)])), await post(false), await post(true)];
    assert.deepEqual(
      calls.map((c) => c.status),
      [200, 200, 200, 200],
    );
    const echoed = calls.map((c) => c.id);
    assert.equal(new Set(echoed).size, 4, `an id per call: ${echoed.join(' ')}`);
    assert.ok(echoed.includes('same'), "the first to come keeps the client's id");
    for (const id of echoed) assert.match(id, /^same(\.[0-9a-f]{8})?$/, "the client's id, with a suffix on a repeat");

    const log = gw.gateway.callLog;
    await waitFor(() => log.recent({ limit: 100 }).length === 4, 'a row per call');
    assert.deepEqual(
      log
        .recent({ limit: 100 })
        .map((r) => r.request_id)
        .sort(),
      [...echoed].sort(),
    );
    assert.equal(log.duplicates, 0, 'nothing for the backstop to drop');
    assert.equal(log.quotas.requestsSince(user.id, startOfUtcDay(Date.now())), 4);
    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: admin })).text();
    const requests = [...metrics.matchAll(/^llm_gateway_requests_total\{[^}]*\} (\d+)$/gm)];
    assert.equal(
      requests.reduce((sum, m) => sum + Number(m[1]), 0),
      4,
      'the metrics count each call',
    );
  });

  test("request ids: the client's unless issued lately or on record; a repeat keeps it as a prefix", () => {
    const recorded = new Set<string>();
    const ids = new RequestIds((id) => recorded.has(id), 2);
    assert.equal(ids.next('abc'), 'abc');
    const again = ids.next('abc');
    assert.match(again, /^abc\.[0-9a-f]{8}$/);
    ids.next('x');
    ids.next('y'); // 'abc' and its repeat are no longer among the ids issued lately…
    recorded.add('abc');
    assert.notEqual(ids.next('abc'), 'abc', '… but its row is on record');
    assert.equal(ids.next('fresh'), 'fresh');
    const long = 'L'.repeat(128);
    assert.equal(ids.next(long), long);
    const longAgain = ids.next(long);
    assert.ok(longAgain !== long && REQUEST_ID.test(longAgain) && longAgain.startsWith('L'.repeat(119)), longAgain);
    for (const bad of [undefined, '', 'a b', ['a', 'b'], 'x'.repeat(129)]) {
      assert.match(ids.next(bad), /^[0-9a-f]{8}-[0-9a-f]{4}-/, `${JSON.stringify(bad)}: a UUID of the gateway's`);
    }
  });
});

const tempStore = tempDirs('llmgw-once-');

describe('a second record of a request id makes no second row', () => {
  const openLog = (t: { after: (fn: () => void) => void }, onDuplicate?: (rec: CallRecord, total: number) => void) => {
    let now = Date.UTC(2026, 2, 15, 12);
    const log = CallLog.open(tempStore(), {
      flushMs: 60_000,
      retentionDays: 0,
      captureBodies: false,
      bodyRetentionDays: 14,
      onDuplicate,
      now: () => now,
    });
    t.after(() => log.close());
    return {
      log,
      advance: (ms: number) => {
        now += ms;
      },
    };
  };

  test('the first record stands; the repeat still counts towards quotas; reports at most once a minute', async (t) => {
    const reported: [string, number][] = [];
    const { log, advance } = openLog(t, (rec, total) => reported.push([rec.request_id, total]));
    const ts = Date.UTC(2026, 2, 15, 11);
    const parked = callRecord({ ts, request_id: 'twice', status: 499, reason: 'client_closed_while_parked' });
    assert.equal(log.record(parked), true);
    assert.equal(log.record(callRecord({ ts, request_id: 'twice', status: 499, reason: 'client_closed' })), false);
    assert.equal(log.record(callRecord({ ts, request_id: 'twice', status: 502 })), false);
    advance(60_000);
    assert.equal(log.record(callRecord({ ts, request_id: 'twice', status: 503 })), false);
    assert.equal(log.record(callRecord({ ts, request_id: 'other' })), true);
    await log.flush();
    const rows = log.recent({ limit: 100 });
    const seen = rows.map((r) => `${r.request_id} ${r.status} ${r.reason}`).sort();
    assert.deepEqual(seen, ['other 200 null', 'twice 499 client_closed_while_parked']);
    assert.equal(log.duplicates, 3);
    assert.deepEqual(
      reported,
      [
        ['twice', 1],
        ['twice', 3],
      ],
      'the first repeat, then one a minute later',
    );
    // a client may repeat its own x-request-id for another call: its use is never left uncounted
    assert.equal(log.quotas.requestsSince(1, startOfUtcDay(ts)), 5);
  });

  test('unauthenticated 401s repeating an id are folded as ever, not reported', async (t) => {
    const reported: string[] = [];
    const { log, advance } = openLog(t, (rec) => reported.push(rec.request_id));
    const refused = (): CallRecord =>
      callRecord({
        request_id: 'scanner',
        user_id: null,
        backend: REFUSED_BACKEND,
        status: 401,
        source: '10.0.0.9',
      });
    for (let i = 0; i < 5; i++) assert.equal(log.record(refused()), true);
    advance(60_000);
    await log.flush();
    const rows = log.recent({ limit: 100 });
    assert.deepEqual(
      rows.map((r) => [r.request_id, r.count]),
      [['scanner', 5]],
    );
    assert.deepEqual(reported, []);
  });

  test('recent ids: a repeat is refused until the id is older than the last `capacity`', () => {
    const ids = new RecentIds(2);
    assert.equal(ids.add('a'), true);
    assert.equal(ids.add('a'), false);
    assert.equal(ids.add('b'), true);
    assert.equal(ids.add('c'), true); // forgets a
    assert.equal(ids.add('b'), false);
    assert.equal(ids.add('a'), true, 'forgets b, the oldest');
    assert.equal(ids.add('c'), false, 'the last two: c and a');
    assert.equal(ids.add('b'), true);
  });

  test('a call settled once: the first outcome is recorded, a later one goes to onRepeat', () => {
    const recorded: number[] = [];
    const repeats: [number, number][] = [];
    const outcome = (status: number): CallOutcome => ({
      requestId: 'r',
      endpoint: 'chat',
      source: 's',
      userId: null,
      requestedModel: 'm',
      backend: null,
      model: null,
      status,
      reason: null,
      startedAt: 0,
      durationMs: 1,
      ttftMs: null,
    });
    const once = new OutcomeOnce(
      (o) => recorded.push(o.status),
      (first, again) => repeats.push([first.status, again.status]),
    );
    assert.equal(once.settled, false);
    assert.equal(once.settle(outcome(499)), true);
    assert.equal(once.settle(outcome(502)), false);
    assert.equal(once.settled, true);
    assert.deepEqual(recorded, [499]);
    assert.deepEqual(repeats, [[499, 502]]);
  });
});

describe('a proxied call has one outcome, whatever its proxy does', () => {
  type Behaviour = 'twice' | 'silent' | 'throws' | 'refuses' | 'reports-then-refuses';
  /** A real fastify app whose one route runs `runProxiedCall` over a proxy behaving as the request asks. */
  async function rig(t: { after: (fn: () => Promise<void>) => void }) {
    const recorded: CallOutcome[] = [];
    const warnings: string[] = [];
    const app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => void warnings.push(line) } } });
    installErrorHandlers(app);
    const callers = new Callers({
      authenticate: () => ({ kind: 'anonymous', isAdmin: false, allow: [] }),
      ipAliases: () => ({}),
      admit: () => ({ ok: true, done: () => undefined }),
    });
    const outcome = (call: ProxyCall, status: number, reason: string | null): CallOutcome => ({
      requestId: String(call.req.id),
      endpoint: 'chat',
      source: 'test',
      userId: null,
      requestedModel: 'm',
      backend: 'b',
      model: 'm',
      status,
      reason,
      startedAt: Date.now(),
      durationMs: 1,
      ttftMs: null,
    });
    const proxy = {
      async handle(call: ProxyCall): Promise<void> {
        const behaviour = call.req.headers['x-behaviour'] as Behaviour;
        if (behaviour === 'throws') throw new TypeError('a bug in the proxy');
        const refusal = new GatewayError({ status: 503, code: 'no_healthy_backend', message: 'none' });
        if (behaviour === 'refuses') throw refusal;
        if (behaviour === 'reports-then-refuses') {
          call.report!(outcome(call, 499, 'client_closed_while_parked'));
          throw refusal;
        }
        if (behaviour === 'twice') {
          call.report!(outcome(call, 499, 'client_closed_while_parked'));
          call.report!(outcome(call, 499, 'client_closed'));
        }
        call.reply.code(200).send({ ok: true });
      },
    };
    const deps = { callers, proxy, recordOutcome: (o: CallOutcome) => void recorded.push(o) };
    const resolution = { requested: 'm', candidates: [] } as unknown as ProxyCall['resolution'];
    app.post('/t', (req, reply) =>
      runProxiedCall(deps, 'chat', req, reply, () => ({
        surface: {} as ProxyCall['surface'],
        resolution,
      })),
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    t.after(() => app.close());
    const { port } = app.server.address() as { port: number };
    const call = async (behaviour: Behaviour) => {
      recorded.length = 0;
      const res = await fetch(`http://127.0.0.1:${port}/t`, {
        method: 'POST',
        body: '{"model":"m"}',
        headers: { 'content-type': 'application/json', 'x-behaviour': behaviour },
      });
      await res.text();
      return { status: res.status, rows: recorded.map((o) => `${o.status} ${o.reason}`) };
    };
    return { call, warnings };
  }

  test('a second report is dropped and warned about; a call that reports nothing gets a row', async (t) => {
    const { call, warnings } = await rig(t);
    assert.deepEqual(await call('twice'), { status: 200, rows: ['499 client_closed_while_parked'] });
    assert.ok(
      warnings.some((w) => w.includes('a call reported a second outcome')),
      'the repeat is heard',
    );
    assert.deepEqual(await call('reports-then-refuses'), { status: 503, rows: ['499 client_closed_while_parked'] });
    assert.deepEqual(await call('refuses'), { status: 503, rows: ['503 no_healthy_backend'] });
    assert.deepEqual(await call('silent'), { status: 200, rows: ['200 unreported'] });
    assert.deepEqual(await call('throws'), { status: 500, rows: ['500 internal_error'] });
  });
});
