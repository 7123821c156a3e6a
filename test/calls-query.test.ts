/**
 * The LLM calls tab's pieces below the routes: the filter as typed, the call log's status
 * class and exact paging cursor (queued rows and stored rows alike, the rare-filter scan), one
 * row by id, and how a captured body is shown (JSON, SSE events, truncation, binary).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CallLog, type CallLogOptions, type CallQuery } from '../src/stats/call-log.ts';
import { truncationMarker } from '../src/stats/bodies.ts';
import { bodyView, parseSse } from '../src/ui/calls-bodies.ts';
import { callsQueryString, parseCallsQuery, parseUtcTime } from '../src/ui/calls-query.ts';
import { callRecord } from './helpers/call-record.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const QUIET: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 0 };
const tempStore = tempDirs('llmgw-calls-q-');
const T0 = Date.UTC(2026, 2, 15, 12);

describe('calls filter as typed', () => {
  test('status classes and codes, text fields, UTC times, the page cursor; errors per field', () => {
    assert.deepEqual(
      parseCallsQuery({ status: '5xx', backend: ' gpu ', since: '2026-03-15T10:00', until: '2026-03-15 11:30:15' })
        .filter,
      {
        statusClass: 5,
        backend: 'gpu',
        since: Date.UTC(2026, 2, 15, 10),
        until: Date.UTC(2026, 2, 15, 11, 30, 15),
      },
    );
    assert.deepEqual(parseCallsQuery({ status: '404', model: 'qwen', source: 'n8n', beforeId: '77' }).filter, {
      status: 404,
      model: 'qwen',
      source: 'n8n',
      beforeId: 77,
    });
    assert.deepEqual(parseCallsQuery({}).filter, {});
    assert.deepEqual(
      parseCallsQuery({ status: ['2xx', '5xx'] }).filter,
      { statusClass: 2 },
      'a repeated key: the first',
    );
    const bad = parseCallsQuery({
      status: '20',
      since: '2026-02-30',
      until: 'yesterday',
      beforeId: '-3',
      model: 'x'.repeat(201),
    });
    assert.equal(bad.filter, null);
    assert.deepEqual(Object.keys(bad.errors).sort(), ['beforeId', 'model', 'since', 'status', 'until']);
    assert.match(bad.errors.since, /2026-02-30/);
    assert.equal(bad.input.status, '20', 'what was typed is kept for the form');
    assert.match(parseCallsQuery({ since: '2026-03-15', until: '2026-03-14' }).errors.until, /after/);
    assert.equal(parseUtcTime('1773576000000'), 1773576000000);
    assert.equal(parseUtcTime('2026-03-15T12:00:00+01:00'), Date.UTC(2026, 2, 15, 11));
    assert.equal(parseUtcTime('2026-13-01'), undefined);
    assert.equal(
      callsQueryString({ status: '5xx', backend: '', model: 'a b&c' }, { beforeId: '9' }),
      '?status=5xx&model=a+b%26c&beforeId=9',
    );
  });
});

describe('call log reads for the console', () => {
  test('status class and exact code, queued and stored alike', async (t) => {
    const log = CallLog.open(tempStore(), QUIET);
    t.after(() => log.close());
    for (const [i, status] of [200, 201, 404, 429, 502, 503].entries()) log.record(callRecord({ ts: T0 + i, status }));
    const statuses = (f: CallQuery) =>
      log
        .recent(f)
        .map((c) => c.status)
        .sort();
    const check = () => {
      assert.deepEqual(statuses({ statusClass: 2 }), [200, 201]);
      assert.deepEqual(statuses({ statusClass: 4 }), [404, 429]);
      assert.deepEqual(statuses({ statusClass: 5 }), [502, 503]);
      assert.deepEqual(statuses({ statusClass: 5, status: 404 }), [404], 'an exact code wins');
    };
    check(); // in the queue
    await log.flush();
    check(); // on disk
  });

  test('paging follows the list order (arrival, then id) exactly, long calls finishing late included', async (t) => {
    const log = CallLog.open(tempStore(), QUIET);
    t.after(() => log.close());
    // ids follow completion: a long call that arrived first is recorded last
    for (let i = 0; i < 30; i++) log.record(callRecord({ ts: T0 + i * 1000, request_id: `short-${i}` }));
    log.record(callRecord({ ts: T0 + 500, request_id: 'long', duration_ms: 60_000 }));
    for (let i = 30; i < 40; i++) log.record(callRecord({ ts: T0 + i * 1000, request_id: `short-${i}` }));
    const walk = () => {
      const seen: string[] = [];
      let cursor: CallQuery = {};
      for (let page = 0; page < 10; page++) {
        const rows = log.recent({ ...cursor, limit: 7 });
        seen.push(...rows.map((r) => r.request_id));
        if (rows.length < 7) break;
        const last = rows[rows.length - 1];
        cursor = { beforeId: last.id, beforeTs: log.get(last.id)!.ts };
      }
      return seen;
    };
    const all = log.recent({ limit: 1000 }).map((r) => r.request_id);
    assert.equal(all.length, 41);
    assert.deepEqual(walk(), all, 'queued: every call once, in order');
    await log.flush();
    assert.deepEqual(walk(), all, 'stored: every call once, in order');
    assert.equal(log.get(9999), undefined);
  });

  test('a rare filter finds its calls past the first scanned rows, in order, with a limit', async (t) => {
    const log = CallLog.open(tempStore(), QUIET);
    t.after(() => log.close());
    for (let i = 0; i < 6_000; i++) log.record(callRecord({ ts: T0 + i, backend: i % 1000 === 0 ? 'rare' : 'common' }));
    await log.flush();
    const rare = log.recent({ backend: 'rare' });
    assert.deepEqual(
      rare.map((r) => r.ts),
      [5000, 4000, 3000, 2000, 1000, 0].map((d) => T0 + d),
    );
    assert.equal(log.recent({ backend: 'rare', limit: 2 }).length, 2);
    assert.deepEqual(
      log.recent({ backend: 'rare', since: T0 + 2500 }).map((r) => r.ts),
      [T0 + 5000, T0 + 4000, T0 + 3000],
    );
    assert.equal(log.recent({ backend: 'common', limit: 50 }).length, 50);
    assert.deepEqual(log.recent({ backend: 'nowhere' }), []);
  });
});

describe('a captured body as shown', () => {
  test('JSON pretty, large bodies collapsed, the cap reported', () => {
    const small = bodyView(Buffer.from('{"a":[1,2]}'), 11);
    assert.equal(small.kind, 'json');
    assert.ok(small.kind === 'json' && small.text === '{\n  "a": [\n    1,\n    2\n  ]\n}' && !small.collapsed);
    const big = bodyView(Buffer.from(JSON.stringify({ text: 'x'.repeat(10_000) })), null);
    assert.ok(big.kind === 'json' && big.collapsed);
    const cut = bodyView(Buffer.from(`{"messages":[{"content":"abc${truncationMarker(900_000)}`), 900_000);
    assert.ok(cut.kind === 'text' && cut.truncatedFrom === 900_000 && !cut.text.includes('truncated by'));
    assert.equal(bodyView(Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0, 0, 7, 8]), 10).kind, 'binary');
    assert.equal(bodyView(null, null).kind, 'none');
  });

  test('an event stream as its events, with the text it streamed', () => {
    const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
    const sse = `: keep-alive\n\n${chunk('Hel')}${chunk('lo')}event: ping\ndata: {"t":1}\n\ndata: [DONE]\n\n`;
    const v = bodyView(Buffer.from(sse), null);
    assert.ok(v.kind === 'sse');
    assert.equal(v.events!.length, 4);
    assert.equal(v.streamed, 'Hello');
    assert.deepEqual(v.events![2], { event: 'ping', data: '{"t":1}', json: true });
    assert.deepEqual(v.events![3], { event: null, data: '[DONE]', json: false });
    const anthropic =
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n';
    assert.equal((bodyView(Buffer.from(anthropic), null) as { streamed: string }).streamed, 'Hi');
    assert.deepEqual(
      parseSse('data: a\ndata: b\n\n').map((e) => e.data),
      ['a\nb'],
    );
  });
});
