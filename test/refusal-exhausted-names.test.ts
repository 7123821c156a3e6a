/**
 * A call that tries its candidates itself and fails (the exhausted path: 502 upstream_unreachable,
 * 503 backend_unavailable, 502 upstream_bad_response, 504 upstream_timeout) words the failure
 * for its caller: a caller who may not see backend names (a plain user, names on auto) gets the
 * reason in the gateway's words, never the upstream's own text, which says where the backend is
 * (`ECONNREFUSED 127.0.0.1:<port>`, a process line, an HTML page); the last backend's own 5xx is
 * relayed in its words with its URLs and addresses replaced. Admins keep the detail.
 * Over real sockets, with the real openai and @anthropic-ai/sdk clients.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'sk-master-exhausted-names-0123';
const NAME = 'rack7-secret-box';
const hi = [{ role: 'user' as const, content: 'hi' }];
type Mode = 'start-failure' | 'html' | 'silent' | 'proxy-error';

/** `/v1/models` lists `m`; chat fails the way `mode` says, each failure naming where the box lives. */
async function failingBox(t: TestContext, mode: Mode): Promise<{ url: string; port: number; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/v1/models')) {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
      return;
    }
    const where = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (mode === 'start-failure') {
      res
        .writeHead(502, { 'content-type': 'text/plain' })
        .end(`unable to start process: /opt/models/llama-server --host ${where} exited`);
    } else if (mode === 'proxy-error') {
      const message = `dial tcp ${where}: connect: connection refused (upstream "http://10.0.0.5:8000/v1/chat")`;
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message } }));
    } else if (mode === 'html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<h1>502 from nginx at ${where}</h1>`);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, port, server };
}

async function lockedGateway(t: TestContext, url: string, overrides = {}): Promise<{ gw: TestGateway; key: string }> {
  const gw = await startGateway([{ name: NAME, url }], { api_key: MASTER, ...overrides });
  t.after(() => gw.close());
  const { key } = gw.gateway.users.create({ name: 'plain' });
  return { gw, key };
}

async function chatError(gw: TestGateway, apiKey: string): Promise<{ status: number; body: string; message: string }> {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0, timeout: 10_000 });
  try {
    await client.chat.completions.create({ model: `${NAME}/m`, messages: hi });
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, String(err));
    return { status: err.status, body: JSON.stringify(err.error), message: (err.error as { message: string }).message };
  }
  return assert.fail('served');
}

function assertNothingOfTheBox(body: string, port: number): void {
  for (const secret of [NAME, '127.0.0.1', String(port), '/opt/models', 'nginx']) {
    assert.equal(body.includes(secret), false, `${secret} in ${body}`);
  }
}

/** Puts the box back in the registry as up, so the next call tries it again. */
const upAgain = (gw: TestGateway) => gw.gateway.registry.discovered(NAME, [{ id: 'm' }]);

describe('the exhausted path, worded for who is calling', () => {
  test('unreachable: a plain user reads "the connection failed", the admin the ECONNREFUSED line', async (t) => {
    const box = await failingBox(t, 'html');
    const { gw, key } = await lockedGateway(t, box.url);
    await new Promise<void>((resolve) => box.server.close(() => resolve()));
    // discovery saw it up; the call itself meets the closed port
    const plain = await chatError(gw, key);
    assert.equal(plain.status, 502);
    assert.match(plain.message, /^No backend could be reached: the connection to the backend failed$/);
    assertNothingOfTheBox(plain.body, box.port);
    // the first failure probes the box and marks it out: the admin asks a gateway of its own
    const second = await lockedGateway(t, box.url);
    upAgain(second.gw);
    const admin = await chatError(second.gw, MASTER);
    assert.match(admin.message, new RegExp(`ECONNREFUSED.*127\\.0\\.0\\.1:${box.port}`));
  });

  test('a model that cannot start (503 backend_unavailable): the status, not the process line', async (t) => {
    const box = await failingBox(t, 'start-failure');
    const { gw, key } = await lockedGateway(t, box.url);
    const plain = await chatError(gw, key);
    assert.equal(plain.status, 503);
    assert.equal(plain.message, 'No backend could take the call: the backend answered HTTP 502');
    assertNothingOfTheBox(plain.body, box.port);
    upAgain(gw);
    assert.match((await chatError(gw, MASTER)).message, /unable to start process: \/opt\/models/);
  });

  test('a 200 that is not JSON (502 upstream_bad_response): no preview of the page', async (t) => {
    const box = await failingBox(t, 'html');
    const { gw, key } = await lockedGateway(t, box.url);
    const plain = await chatError(gw, key);
    assert.equal(plain.status, 502);
    assert.equal(plain.message, 'The backend answered 200 with a body the gateway could not read');
    assertNothingOfTheBox(plain.body, box.port);
    upAgain(gw);
    assert.match((await chatError(gw, MASTER)).message, new RegExp(`^The backend \`${NAME}\`.*nginx`));
  });

  test("a timeout keeps the gateway's own deadline; the Anthropic shape is worded the same", async (t) => {
    const box = await failingBox(t, 'silent');
    const { gw, key } = await lockedGateway(t, box.url, { request_timeout_s: 1 });
    const plain = await chatError(gw, key);
    assert.equal(plain.status, 504);
    const deadline = 'no answer within 1 s (request_timeout_s)';
    assert.equal(plain.message, `The backend did not answer in time (${deadline}).`);
    assertNothingOfTheBox(plain.body, box.port);
    upAgain(gw);
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, timeout: 10_000 });
    const err = await anthropic.messages.create({ model: `${NAME}/m`, max_tokens: 8, messages: hi }).then(
      () => assert.fail('served'),
      (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
    );
    assert.ok(err instanceof Anthropic.APIError);
    const body = err.error as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.match(body.error.message, /^The backend did not answer in time/);
    assertNothingOfTheBox(JSON.stringify(body), box.port);
  });

  test("the last backend's own 502 is relayed in its words, its addresses replaced for a plain user", async (t) => {
    const box = await failingBox(t, 'proxy-error');
    const { gw, key } = await lockedGateway(t, box.url);
    const plain = await chatError(gw, key);
    assert.equal(plain.status, 502);
    const hidden = 'dial tcp [upstream address]: connect: connection refused (upstream "[upstream address]")';
    assert.equal(plain.message, hidden);
    assertNothingOfTheBox(plain.body, box.port);
    assert.equal(plain.body.includes('10.0.0.5'), false, plain.body);
    const second = await lockedGateway(t, box.url);
    const admin = await chatError(second.gw, MASTER);
    const verbatim =
      `dial tcp 127.0.0.1:${box.port}: connect: connection refused ` + '(upstream "http://10.0.0.5:8000/v1/chat")';
    assert.equal(admin.message, verbatim);
  });
});
