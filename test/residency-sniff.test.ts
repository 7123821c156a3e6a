/**
 * Residency of a llama-swap box whose model list names another owner (issue 19; the bench's
 * simulated fleet is one): after `/api/ps` and `/api/v0/models` say no, `GET /running` is
 * asked, over sockets, and a call for another model is then known to need a load.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listenFake } from './fakes/listen.ts';
import { startGateway } from './helpers/gateway.ts';

test('a box that only answers /running is read as llama-swap', async (t) => {
  const seen: string[] = [];
  let loaded = 'a';
  const box = await listenFake({
    label: 'swap-box',
    refuse: () => false,
    crashed: (res) => {
      res.writeHead(500).end();
    },
    handle: async (req, res) => {
      seen.push(`${req.method} ${req.url}`);
      const send = (status: number, json: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      if (req.url === '/v1/models') {
        const data = ['a', 'b'].map((id) => ({ id, object: 'model', owned_by: 'box' }));
        return void send(200, { object: 'list', data });
      }
      if (req.url === '/running') return void send(200, { running: [{ model: loaded, state: 'ready' }] });
      if (req.url === '/v1/chat/completions' && req.method === 'POST') {
        let body = '';
        for await (const chunk of req) body += chunk;
        loaded = (JSON.parse(body) as { model: string }).model;
        const message = { role: 'assistant', content: 'ok' };
        return void send(200, {
          id: 'x',
          object: 'chat.completion',
          created: 0,
          model: loaded,
          choices: [{ index: 0, message, finish_reason: 'stop' }],
          usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
        });
      }
      send(404, { error: 'not found' });
    },
  });
  const url = `http://127.0.0.1:${box.port}`;
  const gw = await startGateway([{ name: 'box', url }], { health_check_interval: 3600 });
  t.after(async () => {
    await gw.close();
    await box.close();
  });

  const view = gw.gateway.residency.view('box', Date.now())!;
  const read = [view.kind, view.mode, view.known, view.models.map((m) => m.model)];
  assert.deepEqual(read, ['llama-swap', 'swap', true, ['a']]);
  assert.deepEqual(
    seen.filter((s) => s.startsWith('GET') && s !== 'GET /v1/models'),
    ['GET /api/ps', 'GET /api/v0/models', 'GET /running'],
  );
  assert.equal(gw.gateway.residency.isResident('box', 'b', Date.now()), false, 'b would need a load');
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'box/b', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200, await res.text());
  assert.equal(gw.gateway.residency.isResident('box', 'b', Date.now()), true, 'the call made b resident');
  await gw.gateway.discovery.pollAll();
  assert.equal(seen.filter((s) => s === 'GET /api/ps').length, 1, 'the kind is remembered: not sniffed again');
});
