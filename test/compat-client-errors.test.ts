/**
 * Errors that Node's HTTP parser or fastify produce on their own still come in the gateway's
 * shape: OpenAI's `{error:{message,type,param,code}}` on /v1/*, Anthropic's on /v1/messages.
 * The parser's (431 headers too large, 400 garbled request) are written on the raw socket,
 * as a complete HTTP/1.1 response that closes the connection.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `request` as is on a fresh connection and reads until the server closes it. */
function rawExchange(gw: TestGateway, request: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(gw.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server kept the connection open'));
    }, 3000);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {}); // the server may reset after answering; what it sent is what counts
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.write(request);
  });
}

const hugeHeader = `x-huge: ${'a'.repeat(20_000)}\r\n`;

function assertOpenAIShape(body: unknown, status: number, code?: string): void {
  const e = (body as { error: Record<string, unknown> }).error;
  assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type'], `${status}: ${JSON.stringify(body)}`);
  assert.equal(typeof e.message, 'string');
  assert.equal(e.type, 'invalid_request_error');
  if (code) assert.equal(e.code, code);
}

describe('errors fastify and Node raise themselves are shaped', () => {
  test('431 request headers too large: OpenAI shape on /v1/*, Anthropic on /v1/messages, connection closed', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    const openai = await rawExchange(
      gw,
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${hugeHeader}\r\n`,
    );
    assert.equal(openai.status, 431);
    assert.equal(openai.headers.connection, 'close');
    assert.match(openai.headers['content-type'], /^application\/json/);
    assert.equal(Number(openai.headers['content-length']), Buffer.byteLength(openai.body));
    assertOpenAIShape(JSON.parse(openai.body), 431, 'request_headers_too_large');
    assert.match(JSON.parse(openai.body).error.message, /headers/);

    const anthropic = await rawExchange(gw, `POST /v1/messages HTTP/1.1\r\nhost: x\r\n${hugeHeader}\r\n`);
    assert.equal(anthropic.status, 431);
    const body = JSON.parse(anthropic.body) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(typeof body.error.message, 'string');

    // fetch (undici) reads it like any other error answer
    const viaFetch = await fetch(`${gw.url}/v1/models`, { headers: { 'x-huge': 'a'.repeat(20_000) } });
    assert.equal(viaFetch.status, 431);
    assertOpenAIShape(await viaFetch.json(), 431, 'request_headers_too_large');
  });

  test('400 for a request the parser cannot read', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    const r = await rawExchange(gw, 'GET /v1/models HTTP/1.1\r\nhost: x\r\nbad header line\r\n\r\n');
    assert.equal(r.status, 400);
    assert.equal(r.headers.connection, 'close');
    assertOpenAIShape(JSON.parse(r.body), 400, 'malformed_request');
  });

  test('415 for a body that is not JSON, 404 for an unknown route', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded']) {
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': type },
        body: '{"model":"m","messages":[]}',
      });
      assert.equal(r.status, 415, type);
      assertOpenAIShape(await r.json(), 415, 'unsupported_media_type');
      assert.ok(r.headers.get('x-request-id'));
    }
    const unknown = await fetch(`${gw.url}/v1/nope`);
    assert.equal(unknown.status, 404);
    assertOpenAIShape(await unknown.json(), 404, 'not_found');
    const wrongMethod = await fetch(`${gw.url}/v1/chat/completions`);
    assert.equal(wrongMethod.status, 404);
    assertOpenAIShape(await wrongMethod.json(), 404, 'not_found');
  });
});
