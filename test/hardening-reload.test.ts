/**
 * Reloads reach waiting calls and probes at once: an alias edit re-resolves parked calls, and
 * a probe of a backend's old spec still in flight does not swallow the probe of the new one.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { backendSpec, startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const post = (url: string, body: unknown) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('configuration reloads', () => {
  test('an alias edit re-resolves parked calls at once', async (t) => {
    const busy = await startFake('llamacpp', { models: ['m1'], knobs: { latencyMs: 3000 } });
    const free = await startFake('vllm', { models: ['m2'] });
    const gw = await startGateway(
      [
        { name: 'busy', url: busy.url, max_concurrent: 1 },
        { name: 'free', url: free.url },
      ],
      { virtual_models: { x: 'm1' }, park_timeout_s: 10 },
    );
    t.after(async () => {
      await gw.close();
      await busy.close();
      await free.close();
    });
    const hog = post(gw.url, { model: 'busy/m1', messages: [] });
    await waitFor(() => busy.inflight === 1, 'busy is busy');
    const parked = post(gw.url, { model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'call parked');
    const started = Date.now();
    gw.gateway.reload({ ...gw.gateway.config(), virtual_models: { x: 'm2' } });
    const res = await parked;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'free');
    assert.ok(Date.now() - started < 1000, 'served at once, not after the hog');
    await hog;
  });

  test('fixing a wrong URL brings the backend up at once even while a probe of the old URL hangs', async (t) => {
    // a host that accepts connections and never answers: the probe of the old spec hangs
    const hanging = createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', () => resolve()));
    const port = (hanging.address() as { port: number }).port;
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([], { health_check_interval: 3600 });
    t.after(async () => {
      await gw.close();
      await fake.close();
      hanging.close();
    });
    const base = gw.gateway.config();
    gw.gateway.reload({ ...base, backends: [backendSpec({ name: 'v', url: `http://127.0.0.1:${port}` })] });
    await new Promise((r) => setTimeout(r, 50)); // the probe of the wrong URL is in flight now
    assert.equal(gw.gateway.registry.get('v')!.healthy, false);
    const started = Date.now();
    gw.gateway.reload({ ...base, backends: [backendSpec({ name: 'v', url: fake.url })] });
    await waitFor(() => gw.gateway.registry.get('v')!.healthy, 'up with the new URL', 2000);
    assert.ok(Date.now() - started < 2000);
  });
});
