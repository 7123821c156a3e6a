/**
 * Unauthenticated 401s are logged, folded: at most one row per source per minute with a
 * `count`, memory bounded; aggregates weigh rows by their count.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CallLog, type CallLogOptions, type CallRecord } from '../src/stats/call-log.ts';
import { REFUSED_BACKEND, RefusalReason } from '../src/stats/record.ts';
import {
  isUnauthenticatedRefusal,
  MAX_FOLDED_SOURCES,
  OVERFLOW_SOURCE,
  RefusalAggregator,
} from '../src/stats/refusal-aggregator.ts';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

const MINUTE = Date.UTC(2026, 2, 15, 12, 7); // a minute boundary
const OPTS: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 14 };

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

let seq = 0;
function badKey(source: string, ts: number, over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts,
    request_id: `r-${++seq}`,
    duration_ms: 2,
    ttft_ms: null,
    endpoint: '/v1/chat/completions',
    source,
    user_id: null,
    requested_model: 'gpt-4',
    model: null,
    backend: REFUSED_BACKEND,
    status: 401,
    reason: 'invalid_api_key',
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning: null,
    cost_usd: 0,
    upstream_cost_usd: null,
    ...over,
  };
}

describe('RefusalAggregator', () => {
  test('only unauthenticated 401s are folded', () => {
    assert.equal(isUnauthenticatedRefusal(badKey('1.2.3.4', MINUTE)), true);
    assert.equal(isUnauthenticatedRefusal(badKey('kid', MINUTE, { user_id: 3 })), false);
    assert.equal(isUnauthenticatedRefusal(badKey('x', MINUTE, { status: 403 })), false);
    assert.equal(isUnauthenticatedRefusal(badKey('x', MINUTE, { backend: 'gpu' })), false, "an upstream's 401");
  });

  test('one row per source per minute, handed over once the minute ended', () => {
    const agg = new RefusalAggregator();
    for (let i = 0; i < 50; i++) assert.deepEqual(agg.add(badKey('1.2.3.4', MINUTE + i * 100), MINUTE + i * 100), []);
    for (let i = 0; i < 3; i++) agg.add(badKey('5.6.7.8', MINUTE + 30_000), MINUTE + 30_000);
    assert.equal(agg.size, 2);
    assert.deepEqual(agg.takeClosed(MINUTE + 59_999), [], 'the minute is not over');
    const rows = agg.takeClosed(MINUTE + 60_000);
    assert.deepEqual(
      rows.map((r) => [r.source, r.count, r.ts]),
      [
        ['1.2.3.4', 50, MINUTE],
        ['5.6.7.8', 3, MINUTE + 30_000],
      ],
    );
    assert.equal(agg.size, 0);
    assert.deepEqual(agg.takeClosed(MINUTE + 120_000), [], 'handed over once');

    agg.add(badKey('1.2.3.4', MINUTE + 61_000), MINUTE + 61_000);
    const next = agg.add(badKey('1.2.3.4', MINUTE + 125_000), MINUTE + 125_000);
    assert.deepEqual(
      next.map((r) => [r.source, r.count]),
      [['1.2.3.4', 1]],
      'a refusal of a later minute hands the last one over',
    );
    assert.deepEqual(
      agg.takeAll().map((r) => r.count),
      [1],
    );
  });

  test('memory is bounded: past the limit of sources, one overflow row takes the rest', () => {
    const agg = new RefusalAggregator();
    for (let i = 0; i < MAX_FOLDED_SOURCES + 500; i++)
      agg.add(badKey(`10.0.${i >> 8}.${i & 255}-${i}`, MINUTE), MINUTE);
    agg.add(badKey('10.0.0.0-0', MINUTE), MINUTE); // a known source still folds into its own row
    assert.equal(agg.size, MAX_FOLDED_SOURCES + 1);
    const rows = agg.takeAll();
    assert.equal(rows.find((r) => r.source === OVERFLOW_SOURCE)!.count, 500);
    assert.equal(rows.find((r) => r.source === '10.0.0.0-0')!.count, 2);
    assert.equal(
      rows.reduce((n, r) => n + (r.count ?? 1), 0),
      MAX_FOLDED_SOURCES + 501,
    );
  });
});

describe('folded 401s in the call log', () => {
  test('rows carry their count; aggregates and percentiles weigh it', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'llmgw-fold-'));
    dirs.push(dir);
    let now = MINUTE;
    const log = CallLog.open(dir, { ...OPTS, now: () => now });
    t.after(() => log.close());
    for (let i = 0; i < 50; i++) log.record(badKey('1.2.3.4', MINUTE + i));
    for (let i = 0; i < 3; i++) log.record(badKey('5.6.7.8', MINUTE + i));
    log.record(badKey('kid', MINUTE, { user_id: 9, status: 404, reason: RefusalReason.unknownModel }));
    log.record({
      ...badKey('kid', MINUTE, { user_id: 9 }),
      backend: 'gpu',
      status: 200,
      reason: null,
      duration_ms: 900,
    });
    assert.equal(log.recent().length, 2, 'the 401s wait for their minute to end');

    now = MINUTE + 60_000;
    const folded = log.recent({ status: 401 });
    assert.deepEqual(folded.map((r) => [r.source, r.count]).sort(), [
      ['1.2.3.4', 50],
      ['5.6.7.8', 3],
    ]);
    await log.flush(); // aggregates read what is on disk
    const [refused] = log.aggregate('backend').filter((r) => r.key === REFUSED_BACKEND);
    assert.equal(refused.calls, 54, '50 + 3 folded + 1');
    assert.equal(refused.errors, 54);
    const bySource = Object.fromEntries(log.aggregate('source').map((r) => [r.key, r.calls]));
    assert.deepEqual(bySource, { '1.2.3.4': 50, '5.6.7.8': 3, kid: 2 });
    const [day] = log.aggregate('day');
    assert.equal(day.calls, 55);
    assert.equal(day.p50_ms, 2, 'the median call is a 401');
    assert.equal(day.p95_ms, 2, '54 of 55 calls took 2 ms');
  });

  test('close() writes the minute under way', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'llmgw-fold-'));
    dirs.push(dir);
    const first = CallLog.open(dir, { ...OPTS, now: () => MINUTE });
    for (let i = 0; i < 7; i++) first.record(badKey('1.2.3.4', MINUTE));
    first.close();
    const log = CallLog.open(dir, OPTS);
    t.after(() => log.close());
    assert.deepEqual(
      log.recent().map((r) => r.count),
      [7],
    );
  });
});

describe('over HTTP', () => {
  test('a scanner with bad keys, changing X-Source every time, gets one row per minute', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'v', url: fake.url }], { api_key: 'master-key-0123456789' });
    let again: Awaited<ReturnType<typeof startGateway>> | undefined;
    t.after(async () => {
      await again?.close();
      await gw.close();
      await fake.close();
    });
    // all within one minute of the clock: wait out the end of a minute that is about to close
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 5_000) await new Promise((r) => setTimeout(r, left + 50));
    for (let i = 0; i < 30; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer sk-guess-${i}-000000000000`,
          'content-type': 'application/json',
          'x-source': `bot-${i}`,
        },
        body: JSON.stringify({ model: 'v/m', messages: [] }),
      });
      assert.equal(res.status, 401);
      await res.text();
    }
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(
      metrics,
      /^llm_gateway_requests_total\{endpoint="\/v1\/chat\/completions",backend="\(refused\)",status="401"\} 30$/m,
      'metrics count every call',
    );

    await gw.app.close(); // the minute under way is written at close
    again = await startGateway(
      [{ name: 'v', url: fake.url }],
      { api_key: 'master-key-0123456789' },
      { storeDir: gw.storeDir },
    );
    const admin = { authorization: 'Bearer master-key-0123456789' };
    const rows = (
      (await (await fetch(`${again.url}/admin/api/calls?status=401`, { headers: admin })).json()) as {
        data: { source: string; count: number; reason: string }[];
      }
    ).data;
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.equal(rows[0].count, 30);
    assert.equal(rows[0].source, '127.0.0.1', 'an unauthenticated caller is attributed by IP, not by its header');
    const stats = (
      (await (await fetch(`${again.url}/admin/api/stats?group=backend`, { headers: admin })).json()) as {
        data: { key: string; calls: number; errors: number }[];
      }
    ).data;
    assert.deepEqual(
      stats.map((s) => [s.key, s.calls, s.errors]),
      [['(refused)', 30, 30]],
    );
  });
});
