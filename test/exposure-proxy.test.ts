/**
 * trust_proxy: behind a reverse proxy on the same host every request comes from 127.0.0.1, so
 * /metrics' loopback rule must look at the client the proxy names in X-Forwarded-For, and
 * only when that proxy is trusted.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startGateway } from './helpers/gateway.ts';
import type { GatewayConfig } from '../src/config/types.ts';

const KEY = 'sk-proxy-test-0123456789abcdef';
const proxied = { 'x-forwarded-for': '203.0.113.5' };

describe('trust_proxy and /metrics', () => {
  for (const trust of [['127.0.0.1'], true, '127.0.0.1/8'] as GatewayConfig['trust_proxy'][]) {
    test(`trust_proxy: ${JSON.stringify(trust)}: a remote client through the local proxy needs the key`, async (t) => {
      const gw = await startGateway([], { api_key: KEY, trust_proxy: trust });
      t.after(() => gw.close());
      const viaProxy = await fetch(`${gw.url}/metrics`, { headers: proxied });
      assert.equal(viaProxy.status, 401);
      const body = (await viaProxy.json()) as { error: { code: string } };
      assert.equal(body.error.code, 'invalid_api_key');
      assert.equal(
        (await fetch(`${gw.url}/metrics`, { headers: { ...proxied, authorization: `Bearer ${KEY}` } })).status,
        200,
      );
      // the proxy's own scrape (or a local client through it) stays keyless
      assert.equal((await fetch(`${gw.url}/metrics`)).status, 200);
      assert.equal((await fetch(`${gw.url}/metrics`, { headers: { 'x-forwarded-for': '127.0.0.1' } })).status, 200);
    });
  }

  test('trust_proxy: false (default): X-Forwarded-For is ignored, the socket address decides', async (t) => {
    const gw = await startGateway([], { api_key: KEY });
    t.after(() => gw.close());
    assert.equal((await fetch(`${gw.url}/metrics`, { headers: proxied })).status, 200);
    const remote = await gw.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '203.0.113.5',
      headers: { 'x-forwarded-for': '127.0.0.1' },
    });
    assert.equal(remote.statusCode, 401, 'a forged header does not make a remote client local');
  });

  test('a proxy that is not trusted cannot vouch for a client', async (t) => {
    const gw = await startGateway([], { api_key: KEY, trust_proxy: ['10.0.0.1'] });
    t.after(() => gw.close());
    const r = await gw.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '198.51.100.7',
      headers: { 'x-forwarded-for': '127.0.0.1' },
    });
    assert.equal(r.statusCode, 401);
    assert.equal(
      (await fetch(`${gw.url}/metrics`, { headers: proxied })).status,
      200,
      '127.0.0.1 is not a trusted proxy here: the socket decides',
    );
  });
});
