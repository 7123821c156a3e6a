/**
 * Discovery over real sockets: model lists of every kind, filters, pricing, failures that keep
 * the last list, the model cache across a restart, and probes that never load a model.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startFake, FAKE_KINDS } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

describe('discovery', () => {
  test('every fake kind is discovered and listed as <backend>/<model>', async (t) => {
    const fakes = await Promise.all(FAKE_KINDS.map((k) => startFake(k)));
    const gw = await startGateway(fakes.map((f) => ({ name: f.kind, url: f.url })));
    t.after(async () => {
      await gw.close();
      await Promise.all(fakes.map((f) => f.close()));
    });
    const listed = (await (await fetch(`${gw.url}/v1/models`)).json()) as {
      object: string;
      data: { id: string; object: string; created: number }[];
    };
    assert.equal(listed.object, 'list');
    for (const f of fakes) {
      const b = gw.gateway.registry.get(f.kind)!;
      assert.equal(b.healthy, true, `${f.kind} healthy`);
      assert.deepEqual(b.models.map((m) => m.id).sort(), [...f.models].sort(), `${f.kind} models`);
      for (const m of f.models)
        assert.ok(
          listed.data.some((d) => d.id === `${f.kind}/${m}`),
          `${f.kind}/${m} listed`,
        );
    }
    for (const d of listed.data) assert.ok(Number.isInteger(d.created) && d.created > 0, `${d.id} has a created time`);
    // no probe ever asked a backend to generate anything
    for (const f of fakes)
      assert.ok(
        f.requests.every((r) => r.method === 'GET'),
        `${f.kind} only saw GETs`,
      );
  });

  test('chat_only and serverless_only filter OpenRouter and Together lists; pricing per million', async (t) => {
    const or = await startFake('openrouter');
    const tg = await startFake('together');
    const gw = await startGateway([
      { name: 'or', url: or.url, paid: true, chat_only: true, serverless_only: true },
      { name: 'tg', url: tg.url, paid: true, chat_only: true, serverless_only: true },
    ]);
    t.after(async () => {
      await gw.close();
      await or.close();
      await tg.close();
    });
    const orModels = gw.gateway.registry.get('or')!.models;
    assert.deepEqual(orModels.map((m) => m.id).sort(), ['acme/chat-large', 'acme/chat-mini']);
    const large = orModels.find((m) => m.id === 'acme/chat-large')!;
    assert.ok(
      Math.abs(large.pricing!.input - 3) < 1e-9 && Math.abs(large.pricing!.output - 15) < 1e-9,
      JSON.stringify(large.pricing),
    );
    const tgModels = gw.gateway.registry.get('tg')!.models;
    assert.deepEqual(
      tgModels.map((m) => m.id),
      ['acme/Llama-3-70B-Instruct-Turbo'],
    );
    assert.equal(tgModels[0].pricing!.input, 0.88);
  });

  test('a failed poll marks the backend down with a classified error but keeps its models', async (t) => {
    const fake = await startFake('vllm');
    const gw = await startGateway([{ name: 'v', url: fake.url }]);
    t.after(() => gw.close());
    assert.equal(gw.gateway.registry.get('v')!.healthy, true);
    await fake.close();
    await gw.gateway.discovery.pollAll();
    const b = gw.gateway.registry.get('v')!;
    assert.equal(b.healthy, false);
    assert.equal(b.error?.kind, 'unreachable');
    assert.equal(b.models.length, fake.models.length);
    const health = (await (await fetch(`${gw.url}/health`)).json()) as {
      status: string;
      backends: Record<string, { healthy: boolean; error: { kind: string; since: number } }>;
    };
    assert.equal(health.status, 'down');
    assert.equal(health.backends.v.healthy, false);
    assert.equal(health.backends.v.error.kind, 'unreachable');
  });

  test('a backend that refuses our credential is down with kind auth; the right key is sent', async (t) => {
    const fake = await startFake('together', { apiKey: 'tg-secret' });
    const gw = await startGateway([
      { name: 'bad', url: fake.url },
      { name: 'good', url: fake.url, api_key: 'tg-secret' },
    ]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    assert.equal(gw.gateway.registry.get('bad')!.error?.kind, 'auth');
    assert.equal(gw.gateway.registry.get('bad')!.error?.status, 401);
    assert.equal(gw.gateway.registry.get('good')!.healthy, true);
  });

  test('the last model list survives a restart, so calls route before the first poll', async (t) => {
    const fake = await startFake('ollama');
    const first = await startGateway([{ name: 'o', url: fake.url }]);
    const storeDir = first.storeDir;
    await first.app.close();
    const { buildApp } = await import('../src/app.ts');
    const { embeddedDefaultConfig } = await import('../src/config/defaults.ts');
    const pino = (await import('pino')).default;
    const { backendSpec } = await import('./helpers/gateway.ts');
    const again = await buildApp({
      config: {
        ...embeddedDefaultConfig(),
        store_dir: storeDir,
        backends: [backendSpec({ name: 'o', url: fake.url })],
      },
      configSource: 'test',
      logger: pino({ level: 'silent' }),
      startDiscovery: false,
    });
    t.after(async () => {
      await again.app.close();
      await fake.close();
    });
    await again.app.listen({ port: 0, host: '127.0.0.1' });
    const before = fake.requests.length;
    const { port } = again.app.server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: `o/${fake.models[0]}`, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      fake.requests.slice(before).map((r) => r.path),
      ['/v1/chat/completions'],
      'no poll happened before the call',
    );
  });
});
