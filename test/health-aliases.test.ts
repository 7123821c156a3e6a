/**
 * /health's view of aliases that shadow a real model id, and of a full fleet snapshot.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

test('an alias named like a real model: who still serves it through the alias, who became unreachable by bare id', async (t) => {
  const a = await startFake('llamacpp', { models: ['qwen3-8b'] });
  const b = await startFake('ollama', { models: ['qwen3-8b'] });
  const gw = await startGateway(
    [
      { name: 'a', url: a.url, local: true, max_concurrent: 2 },
      { name: 'b', url: b.url, local: true, paid: true },
    ],
    { virtual_models: { 'qwen3-8b': { a: 'qwen3-8b' }, 'claude-*': 'qwen3-8b', 'claude-*haiku*': { b: 'qwen3-8b' } } },
  );
  t.after(async () => {
    await gw.close();
    await a.close();
    await b.close();
  });
  const health = (await (await fetch(`${gw.url}/health`)).json()) as {
    status: string;
    alias_collisions: { alias: string; stillServedBy: string[]; unreachable: string[] }[];
    alias_patterns: { pattern: string; target: unknown }[];
    backends: Record<
      string,
      {
        healthy: boolean;
        models: number;
        inflight: number;
        max_concurrent: number;
        paid: boolean;
        speed: number | null;
      }
    >;
    parked: { total: number };
  };
  assert.equal(health.status, 'ok');
  assert.deepEqual(health.alias_collisions, [{ alias: 'qwen3-8b', stillServedBy: ['a'], unreachable: ['b'] }]);
  assert.deepEqual(
    health.alias_patterns,
    [
      { pattern: 'claude-*haiku*', target: { b: 'qwen3-8b' } },
      { pattern: 'claude-*', target: 'qwen3-8b' },
    ],
    'patterns, most specific first (they are not listed in /v1/models)',
  );
  assert.deepEqual(health.backends.a, {
    ...health.backends.a,
    healthy: true,
    models: 1,
    inflight: 0,
    max_concurrent: 2,
    paid: false,
    speed: null,
  });
  assert.equal(health.backends.b.paid, true);
  assert.equal(health.parked.total, 0);
  // the alias wins the bare id: only a serves it; b stays reachable through its prefix
  const viaAlias = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'x' }] }),
  });
  assert.equal(viaAlias.headers.get('x-gateway-backend'), 'a');
  const viaPrefix = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b/qwen3-8b', messages: [{ role: 'user', content: 'x' }] }),
  });
  assert.equal(viaPrefix.headers.get('x-gateway-backend'), 'b');
  assert.ok(
    existsSync(join(gw.storeDir, 'store.db')) && existsSync(join(gw.storeDir, 'jobs')),
    'store and jobs created on first start',
  );
});
