/**
 * An open gateway (no api_key, no users) on loopback answers only requests addressed to this
 * machine, on every route (DNS rebinding: a page whose name now resolves to 127.0.0.1 sends
 * `Host: evil.example`), and takes no POST from a web page of another origin (a multipart form
 * needs no CORS preflight). This machine's own names and addresses keep working: a same-host
 * Prometheus scraping http://<hostname>:4000. With `metrics_access: loopback` /metrics checks
 * the Host the same way on a locked gateway too.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { describe, test } from 'node:test';
import { OwnHost } from '../src/auth/own-host.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { rawRequest } from './helpers/raw-http.ts';

type OpenAIError = { error: { message: string; type: string; param: string | null; code: string } };
const KEY = 'sk-master-open-guard-0123456789';

function assertOpenAIError(text: string, code: string): void {
  const body = JSON.parse(text) as OpenAIError;
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(body.error.code, code);
  assert.equal(body.error.type, 'permission_error');
}

function lanAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
}

/** One request written as is over a socket (node:http always sends a Host); the answer as text. */
function http10(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

const chat = (model: string) => JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] });

function multipartForm(model: string): { body: string; type: string } {
  const boundary = '----gwtest7f3a';
  const part = (name: string, value: string, file?: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${file ? `; filename="${file}"` : ''}\r\n` +
    `${file ? 'Content-Type: audio/wav\r\n' : ''}\r\n${value}\r\n`;
  const body = `${part('model', model)}${part('file', 'RIFF....WAVEfake', 'a.wav')}--${boundary}--\r\n`;
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

describe('an open gateway and the Host header (DNS rebinding)', () => {
  let fake: FakeBackend;
  let gw: TestGateway;
  const setup = async (overrides = {}) => {
    fake = await startFake('vllm');
    gw = await startGateway([{ name: 'v', url: fake.url, local: true }], overrides);
    return async () => {
      await gw.close();
      await fake.close();
    };
  };

  test("a foreign Host is refused on every route, in the surface's shape; nothing reaches a backend", async (t) => {
    t.after(await setup());
    const evil = { host: 'evil.example' };
    const paths = [
      '/v1/models',
      '/v1/jobs/job_0123',
      '/v1/responses/resp_0123456789abcdef',
      '/metrics',
      '/health',
      '/v1/models/v/acme%2FQwen3-8B-Instruct',
    ];
    for (const path of paths) {
      const r = await rawRequest(gw.url, 'GET', path, evil);
      assert.equal(r.status, 403, path);
      assertOpenAIError(r.text, 'host_not_allowed');
      assert.match(r.json<OpenAIError>().error.message, /allowed_hosts/);
    }
    const before = fake.requests.length;
    const jsonEvil = { ...evil, 'content-type': 'application/json' };
    const post = await rawRequest(gw.url, 'POST', '/v1/chat/completions', jsonEvil, chat('acme/Qwen3-8B-Instruct'));
    assert.equal(post.status, 403);
    const messages = await rawRequest(gw.url, 'POST', '/v1/messages', jsonEvil, chat('acme/Qwen3-8B-Instruct'));
    assert.equal(messages.status, 403);
    const anthropic = messages.json<{ type: string; error: { type: string; message: string } }>();
    assert.deepEqual(Object.keys(anthropic), ['type', 'error']);
    assert.equal(anthropic.error.type, 'permission_error');
    assert.equal(fake.requests.length, before, 'no refused call reached the backend');
    // a forwarded host naming somewhere else is refused too
    assert.equal((await rawRequest(gw.url, 'GET', '/v1/models', { 'x-forwarded-host': 'evil.example' })).status, 403);
  });

  test("loopback names, this machine's hostname and its addresses get in", async (t) => {
    t.after(await setup());
    const authorities = [
      `127.0.0.1:${gw.port}`,
      `localhost:${gw.port}`,
      'localhost',
      `127.0.1.1:${gw.port}`,
      `[::1]:${gw.port}`,
      `${hostname()}:${gw.port}`,
      `${hostname().split('.')[0].toUpperCase()}.local:${gw.port}`,
    ];
    const lan = lanAddress();
    if (lan) authorities.push(`${lan}:${gw.port}`);
    for (const host of authorities) {
      const r = await rawRequest(gw.url, 'GET', '/v1/models', { host });
      assert.equal(r.status, 200, `${host}: ${r.text}`);
    }
    const metrics = await rawRequest(gw.url, 'GET', '/metrics', { host: `${hostname()}:${gw.port}` });
    assert.equal(metrics.status, 200, 'a same-host Prometheus scraping http://<hostname>:<port>/metrics');
  });

  test('real setups: containers, IP literals, *.localhost, trailing dots; the 403 says what to add', async (t) => {
    t.after(await setup({ allowed_hosts: ['Gateway.LAN.', 'llm.example.com:443'] }));
    // Open WebUI / LibreChat in Docker, the gateway published on a host or NAT address, IPv6 with a zone
    const served = [
      'host.docker.internal:4000',
      'gateway.docker.internal',
      'host.containers.internal:4000',
      '172.17.0.1:4000',
      '203.0.113.9:8080',
      '[fd00::9]:4000',
      '[fe80::1%25eth0]:4000',
      'webui.localhost:4000',
      'LOCALHOST.:4000',
      `${hostname().toUpperCase()}.:9999`,
      'gateway.lan.:4000',
      'GATEWAY.LAN',
      'llm.example.com',
    ];
    for (const host of served) {
      const r = await rawRequest(gw.url, 'GET', '/v1/models', { host });
      assert.equal(r.status, 200, `${host}: ${r.text}`);
    }
    // nginx keeping Host at 127.0.0.1 and sending the public name as X-Forwarded-Host, listed with its port
    const proxied = { host: `127.0.0.1:${gw.port}`, 'x-forwarded-host': 'llm.example.com, 127.0.0.1' };
    assert.equal((await rawRequest(gw.url, 'GET', '/v1/models', proxied)).status, 200);
    // HTTP/1.0 without a Host (HAProxy's default health check): no browser sends that
    assert.match(await http10(gw.port, 'GET /health HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 /);
    assert.match(await http10(gw.port, 'GET /health HTTP/1.0\r\nHost: evil.example\r\n\r\n'), /^HTTP\/1\.1 403 /);
    // a name that a page could re-point still is refused, and the answer names the header and the line to add
    const forwarded = { host: `127.0.0.1:${gw.port}`, 'x-forwarded-host': 'LLM.Other.example:443' };
    const refused = await rawRequest(gw.url, 'GET', '/v1/models', forwarded);
    assert.equal(refused.status, 403);
    const message = refused.json<OpenAIError>().error.message;
    assert.match(message, /`X-Forwarded-Host: LLM\.Other\.example:443` is not one/);
    assert.match(message, /allowed_hosts: \["llm\.other\.example"\]/);
    assert.match(message, /set api_key/);
    for (const host of ['gateway.lan.evil.example', 'host.docker.internal.evil.example', 'localhost.evil.example']) {
      assert.equal((await rawRequest(gw.url, 'GET', '/v1/models', { host })).status, 403, host);
    }
    // an IP literal passes as a Host, not as an Origin: a page on a LAN address is another site
    const json = { 'content-type': 'application/json', origin: 'http://203.0.113.9:3080' };
    const post = await rawRequest(gw.url, 'POST', '/v1/chat/completions', json, chat('acme/Qwen3-8B-Instruct'));
    assert.equal(post.status, 403);
  });

  test('allowed_hosts adds names (hot); a locked gateway serves any Host', async (t) => {
    t.after(await setup());
    assert.equal((await rawRequest(gw.url, 'GET', '/v1/models', { host: 'gateway.lan:4000' })).status, 403);
    gw.gateway.reload({ ...gw.gateway.config(), allowed_hosts: ['Gateway.LAN'] });
    assert.equal((await rawRequest(gw.url, 'GET', '/v1/models', { host: 'gateway.lan:4000' })).status, 200);
    gw.gateway.reload({ ...gw.gateway.config(), allowed_hosts: [], api_key: KEY });
    const bearer = { authorization: `Bearer ${KEY}` };
    const locked = await rawRequest(gw.url, 'GET', '/v1/models', { host: 'llm.example.com', ...bearer });
    assert.equal(locked.status, 200, 'a locked gateway behind a reverse proxy keeps its public name');
  });

  test('metrics_access loopback: a foreign Host needs the key even from 127.0.0.1 on a locked gateway', async (t) => {
    t.after(await setup({ api_key: KEY }));
    const evil = await rawRequest(gw.url, 'GET', '/metrics', { host: 'evil.example' });
    assert.equal(evil.status, 401);
    const bearer = { authorization: `Bearer ${KEY}` };
    const withKey = await rawRequest(gw.url, 'GET', '/metrics', { host: 'evil.example', ...bearer });
    assert.equal(withKey.status, 200);
    assert.equal((await rawRequest(gw.url, 'GET', '/metrics', { host: `${hostname()}:${gw.port}` })).status, 200);
    assert.equal((await rawRequest(gw.url, 'GET', '/metrics')).status, 200);
  });
});

describe('an open gateway and cross-site posts', () => {
  test('a POST from a foreign Origin is refused (forms too); loopback, own, cors_origins pass', async (t) => {
    const fake = await startFake('vllm');
    const gw = await startGateway([{ name: 'v', url: fake.url, local: true }], {
      cors_origins: ['http://app.example:3000'],
    });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const json = { 'content-type': 'application/json' };
    const model = 'acme/Qwen3-8B-Instruct';
    const before = fake.requests.length;

    const form = multipartForm(model);
    const postForm = (origin: string) =>
      rawRequest(gw.url, 'POST', '/v1/audio/transcriptions', { 'content-type': form.type, origin }, form.body);
    const formPost = await postForm('http://evil.example');
    assert.equal(formPost.status, 403, formPost.text);
    assertOpenAIError(formPost.text, 'origin_not_allowed');
    assert.match(formPost.json<OpenAIError>().error.message, /cors_origins/);
    for (const origin of ['http://evil.example', 'null', 'https://127.0.0.1.evil.example']) {
      const r = await rawRequest(gw.url, 'POST', '/v1/chat/completions', { ...json, origin }, chat(model));
      assert.equal(r.status, 403, origin);
      assertOpenAIError(r.text, 'origin_not_allowed');
    }
    // the answer says what to list, and never suggests listing "null" (every sandboxed frame of every site)
    const listIt = await rawRequest(
      gw.url,
      'POST',
      '/v1/chat/completions',
      { ...json, origin: 'http://web.lan:3080' },
      chat(model),
    );
    assert.match(listIt.json<OpenAIError>().error.message, /cors_origins: \["http:\/\/web\.lan:3080"\]/);
    const opaque = await rawRequest(gw.url, 'POST', '/v1/chat/completions', { ...json, origin: 'null' }, chat(model));
    const opaqueMessage = opaque.json<OpenAIError>().error.message;
    assert.match(opaqueMessage, /sandboxed frame or a file:\/\/ page/);
    assert.doesNotMatch(opaqueMessage, /\["null"\]/);
    const del = await rawRequest(gw.url, 'DELETE', '/v1/responses/resp_0123456789abcdef', { origin: 'http://a.test' });
    assert.equal(del.status, 403);
    assert.equal(fake.requests.length, before, 'nothing reached the backend');

    const origins = [
      undefined,
      `http://localhost:${gw.port}`,
      'http://127.0.0.1:5173',
      `http://${hostname()}:${gw.port}`,
      'http://app.example:3000',
    ];
    for (const origin of origins) {
      const headers = { ...json, ...(origin ? { origin } : {}) };
      const r = await rawRequest(gw.url, 'POST', '/v1/chat/completions', headers, chat(model));
      assert.equal(r.status, 200, `${origin}: ${r.text}`);
    }
    const ok = await postForm(`http://localhost:${gw.port}`);
    assert.equal(ok.status, 200, ok.text);
    // a GET from a foreign origin is CORS's business (the browser hides the answer): not refused here
    assert.equal((await rawRequest(gw.url, 'GET', '/v1/models', { origin: 'http://evil.example' })).status, 200);
  });

  test('a locked gateway leaves Origin to CORS and the key', async (t) => {
    const fake = await startFake('vllm');
    const gw = await startGateway([{ name: 'v', url: fake.url, local: true }], { api_key: KEY });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      origin: 'http://evil.example',
      authorization: `Bearer ${KEY}`,
    };
    const r = await rawRequest(gw.url, 'POST', '/v1/chat/completions', headers, chat('acme/Qwen3-8B-Instruct'));
    assert.equal(r.status, 200);
  });
});

describe('OwnHost', () => {
  test('loopback, the hostname (full, short, .local) and interface addresses; refreshed after 30 s', () => {
    let now = 0;
    let addresses = ['192.168.1.5', 'fe80::1%eth0', '127.0.0.1'];
    const own = new OwnHost({ hostname: () => 'Box.home.arpa', addresses: () => addresses, now: () => now });
    const ownNames = [
      'localhost',
      '127.0.1.1',
      '::1',
      'box.home.arpa',
      'box',
      'box.local',
      'BOX',
      '192.168.1.5',
      'fe80::1',
      '[fe80::1]',
    ];
    for (const name of ownNames) {
      assert.equal(own.isOwnName(name), true, name);
    }
    for (const name of ['evil.example', 'box.evil.example', 'box.lan', '192.168.1.6', '']) {
      assert.equal(own.isOwnName(name), false, name);
    }
    assert.equal(own.isOwnAddress('::ffff:192.168.1.5'), true);
    assert.equal(own.isOwnAddress('192.168.1.9'), false);
    addresses = ['10.0.0.7'];
    assert.equal(own.isOwnName('10.0.0.7'), false, 'read at most every 30 s');
    now = 30_000;
    assert.equal(own.isOwnName('10.0.0.7'), true);
    assert.equal(own.isOwnName('192.168.1.5'), false);
  });
});
