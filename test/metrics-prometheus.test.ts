import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CallRecord } from '../src/stats/call-log.ts';
import { GatewayMetrics, LATENCY_BUCKETS_S } from '../src/stats/metrics.ts';
import { REFUSED_BACKEND } from '../src/stats/record.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A strict little parser of the Prometheus text format: fails on any line it does not understand. */
function parseExposition(text: string): { samples: Sample[]; help: Map<string, string>; type: Map<string, string> } {
  const samples: Sample[] = [];
  const help = new Map<string, string>();
  const type = new Map<string, string>();
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const sampleLine = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: \\d+)?$`);
  const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m: RegExpMatchArray | null;
    if ((m = line.match(new RegExp(`^# HELP (${NAME}) (.*)$`)))) help.set(m[1], m[2]);
    else if ((m = line.match(new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`))))
      type.set(m[1], m[2]);
    else if ((m = line.match(sampleLine))) {
      const labels: Record<string, string> = {};
      const body = m[2] ?? '';
      labelPair.lastIndex = 0;
      while (labelPair.lastIndex < body.length) {
        const l = labelPair.exec(body);
        assert.ok(l, `bad labels in: ${line}`);
        labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
      }
      // Prometheus reads values with Go's ParseFloat: +Inf/-Inf/NaN, case-insensitive
      // (prom-client prints an empty event-loop histogram's mean as "Nan").
      const raw = m[3].toLowerCase();
      const value = raw === '+inf' ? Infinity : raw === '-inf' ? -Infinity : raw === 'nan' ? NaN : Number(raw);
      assert.ok(!Number.isNaN(value) || raw === 'nan', `bad value in: ${line}`);
      samples.push({ name: m[1], labels, value });
    } else assert.fail(`not Prometheus text: ${JSON.stringify(line)}`);
  }
  for (const s of samples) {
    const family = type.has(s.name) ? s.name : s.name.replace(/_(bucket|sum|count|total|created)$/, '');
    const known = type.has(family) ? family : s.name;
    assert.ok(type.has(known), `no TYPE for ${s.name}`);
    assert.ok(help.has(known), `no HELP for ${s.name}`);
  }
  return { samples, help, type };
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hit = samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return hit?.value;
}

function call(over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: Date.now(),
    request_id: 'req-secret-id',
    duration_ms: 2500,
    ttft_ms: 400,
    endpoint: '/v1/chat/completions',
    source: 'alice@example',
    user_id: 42,
    requested_model: 'fast',
    model: 'qwen3-8b',
    backend: 'gpu1',
    status: 200,
    reason: null,
    prompt_tokens: 1000,
    completion_tokens: 50,
    cached_tokens: 600,
    cache_write_tokens: 100,
    reasoning: null,
    cost_usd: 0.01,
    upstream_cost_usd: null,
    ...over,
  };
}

describe('GatewayMetrics', () => {
  test('renders valid Prometheus text with every gateway family and process metrics', async () => {
    const m = new GatewayMetrics();
    m.observeCall(call());
    m.setBackendGauges([{ name: 'gpu1', up: true, inflight: 2, cap: 4 }]);
    m.setParked({ fast: 3 });
    m.discoveryError('gpu2', 'unreachable');
    const { samples, type } = parseExposition(await m.render());
    assert.match(m.contentType, /^text\/plain/);

    for (const [name, kind] of [
      ['llm_gateway_requests_total', 'counter'],
      ['llm_gateway_request_duration_seconds', 'histogram'],
      ['llm_gateway_ttft_seconds', 'histogram'],
      ['llm_gateway_tokens_total', 'counter'],
      ['llm_gateway_cost_usd_total', 'counter'],
      ['llm_gateway_backend_inflight', 'gauge'],
      ['llm_gateway_backend_cap', 'gauge'],
      ['llm_gateway_backend_up', 'gauge'],
      ['llm_gateway_parked_calls', 'gauge'],
      ['llm_gateway_discovery_errors_total', 'counter'],
    ]) {
      assert.equal(type.get(name), kind, name);
    }
    assert.ok(type.has('process_cpu_user_seconds_total'), 'default process metrics');
    assert.ok(type.has('nodejs_eventloop_lag_seconds'), 'default Node.js metrics');

    assert.equal(value(samples, 'llm_gateway_backend_inflight', { backend: 'gpu1' }), 2);
    assert.equal(value(samples, 'llm_gateway_backend_cap', { backend: 'gpu1' }), 4);
    assert.equal(value(samples, 'llm_gateway_backend_up', { backend: 'gpu1' }), 1);
    assert.equal(value(samples, 'llm_gateway_parked_calls', { alias: 'fast' }), 3);
    assert.equal(value(samples, 'llm_gateway_discovery_errors_total', { backend: 'gpu2', kind: 'unreachable' }), 1);
  });

  test('observeCall moves counters and histograms; buckets reach cold-load times', async () => {
    const m = new GatewayMetrics({ defaultMetrics: false });
    m.observeCall(call());
    m.observeCall(call({ duration_ms: 240_000, ttft_ms: 200_000, upstream_cost_usd: 0.5 })); // a 4-minute cold load
    m.observeCall(
      call({
        backend: REFUSED_BACKEND,
        status: 429,
        ttft_ms: null,
        prompt_tokens: 0,
        completion_tokens: 0,
        cached_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: 0,
      }),
    );
    const { samples } = parseExposition(await m.render());

    const req = { endpoint: '/v1/chat/completions', backend: 'gpu1', status: '200' };
    assert.equal(value(samples, 'llm_gateway_requests_total', req), 2);
    assert.equal(value(samples, 'llm_gateway_requests_total', { backend: REFUSED_BACKEND, status: '429' }), 1);
    assert.equal(value(samples, 'llm_gateway_tokens_total', { backend: 'gpu1', direction: 'in' }), 2000);
    assert.equal(value(samples, 'llm_gateway_tokens_total', { backend: 'gpu1', direction: 'out' }), 100);
    assert.equal(value(samples, 'llm_gateway_cache_tokens_total', { backend: 'gpu1', kind: 'read' }), 1200);
    assert.equal(value(samples, 'llm_gateway_cache_tokens_total', { backend: 'gpu1', kind: 'write' }), 200);
    assert.ok(
      Math.abs(value(samples, 'llm_gateway_cost_usd_total', { backend: 'gpu1' })! - 0.51) < 1e-12,
      'upstream cost wins',
    );

    const dur = { endpoint: '/v1/chat/completions', backend: 'gpu1' };
    assert.equal(value(samples, 'llm_gateway_request_duration_seconds_count', dur), 2);
    assert.equal(value(samples, 'llm_gateway_request_duration_seconds_sum', dur), 242.5);
    assert.equal(value(samples, 'llm_gateway_request_duration_seconds_bucket', { ...dur, le: '2.5' }), 1);
    assert.equal(value(samples, 'llm_gateway_request_duration_seconds_bucket', { ...dur, le: '120' }), 1);
    assert.equal(value(samples, 'llm_gateway_request_duration_seconds_bucket', { ...dur, le: '300' }), 2);
    assert.equal(value(samples, 'llm_gateway_ttft_seconds_count', { backend: 'gpu1' }), 2);
    assert.equal(
      value(samples, 'llm_gateway_ttft_seconds_count', { backend: REFUSED_BACKEND }),
      undefined,
      'no ttft, no observation',
    );
    const buckets = samples
      .filter((s) => s.name === 'llm_gateway_ttft_seconds_bucket' && s.labels.backend === 'gpu1')
      .map((s) => s.labels.le);
    assert.deepEqual(buckets, [...LATENCY_BUCKETS_S.map(String), '+Inf']);
    assert.equal(Math.max(...LATENCY_BUCKETS_S), 600);
  });

  test('estimated tokens are counted apart (and in the totals); a free backend adds no cost', async () => {
    const m = new GatewayMetrics({ defaultMetrics: false });
    m.observeCall(call());
    m.observeCall(call({ usage_estimated: true, prompt_tokens: 30, completion_tokens: 7 }));
    m.observeCall(call({ backend: 'free', paid: false, upstream_cost_usd: 0.3 }));
    const { samples, type } = parseExposition(await m.render());
    assert.equal(type.get('llm_gateway_estimated_tokens_total'), 'counter');
    assert.equal(value(samples, 'llm_gateway_tokens_total', { backend: 'gpu1', direction: 'in' }), 1030);
    assert.equal(value(samples, 'llm_gateway_estimated_tokens_total', { backend: 'gpu1', direction: 'in' }), 30);
    assert.equal(value(samples, 'llm_gateway_estimated_tokens_total', { backend: 'gpu1', direction: 'out' }), 7);
    assert.equal(value(samples, 'llm_gateway_estimated_tokens_total', { backend: 'free' }), undefined);
    assert.equal(value(samples, 'llm_gateway_cost_usd_total', { backend: 'free' }), undefined);
  });

  test('no user, source, request id or model in any label', async () => {
    const m = new GatewayMetrics({ defaultMetrics: false });
    m.observeCall(call());
    const { samples } = parseExposition(await m.render());
    const labelValues = samples.flatMap((s) => Object.values(s.labels));
    for (const leak of ['alice@example', 'req-secret-id', 'qwen3-8b', 'fast', '42']) {
      assert.ok(!labelValues.includes(leak), `label value ${leak} leaked`);
    }
    const labelNames = new Set(samples.flatMap((s) => Object.keys(s.labels)));
    assert.deepEqual([...labelNames].sort(), ['backend', 'direction', 'endpoint', 'kind', 'le', 'status']);
  });

  test('gauges are replaced wholesale: gone backends and aliases disappear', async () => {
    const m = new GatewayMetrics({ defaultMetrics: false });
    m.setBackendGauges([
      { name: 'a', up: true, inflight: 1, cap: 0 },
      { name: 'b', up: false, inflight: 0, cap: 2 },
    ]);
    m.setParked({ x: 1, y: 2 });
    m.setBackendGauges([{ name: 'b', up: true, inflight: 1, cap: 2 }]);
    m.setParked({});
    const { samples } = parseExposition(await m.render());
    assert.equal(value(samples, 'llm_gateway_backend_up', { backend: 'a' }), undefined);
    assert.equal(value(samples, 'llm_gateway_backend_up', { backend: 'b' }), 1);
    assert.equal(samples.filter((s) => s.name === 'llm_gateway_parked_calls').length, 0);
  });

  test('two instances share no state and never touch the global registry', async () => {
    const { register } = await import('prom-client');
    const globalBefore = await register.metrics();
    const one = new GatewayMetrics({ defaultMetrics: false });
    const two = new GatewayMetrics({ defaultMetrics: false });
    assert.notEqual(one.registry, two.registry);
    one.observeCall(call());
    one.discoveryError('gpu1', 'timeout');
    const a = parseExposition(await one.render()).samples;
    const b = parseExposition(await two.render()).samples;
    assert.equal(value(a, 'llm_gateway_requests_total', { backend: 'gpu1' }), 1);
    assert.equal(value(b, 'llm_gateway_requests_total', { backend: 'gpu1' }), undefined);
    assert.equal(value(b, 'llm_gateway_discovery_errors_total'), undefined);
    assert.equal(await register.metrics(), globalBefore);
  });
});
