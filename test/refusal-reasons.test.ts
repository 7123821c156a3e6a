/**
 * A refusal says why: when no candidate can serve, the 503 names each candidate's reason
 * (credential refused, unreachable, loading, draining, disabled, circuit open until T, parked
 * past the wait with N ahead) in one sentence and in `error.candidates`, in the endpoint's own
 * shape, judged by the real `openai` and `@anthropic-ai/sdk` clients over real sockets.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startFake } from './fakes/index.ts';
import { backendSpec, startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const sdkOptions = { maxRetries: 0, timeout: 10_000 };
const openai = (gw: TestGateway, apiKey = 'none') => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, ...sdkOptions });
const anthropic = (gw: TestGateway, apiKey = 'none') => new Anthropic({ baseURL: gw.url, apiKey, ...sdkOptions });
const hi = [{ role: 'user' as const, content: 'hi' }];

type OpenAIError = InstanceType<typeof OpenAI.APIError>;

/** The SDK's error for a chat call that must fail. */
async function chatError(client: OpenAI, model: string): Promise<OpenAIError> {
  try {
    await client.chat.completions.create({ model, messages: hi });
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, String(err));
    return err;
  }
  return assert.fail(`${model} was served`);
}

/** `error` of the OpenAI-shaped body (the SDK keeps it as `err.error`). */
type BodyError = { message: string; code: string; candidates?: any[] };
const bodyError = (err: OpenAIError) => err.error as BodyError;

/** A llama.cpp fake behind a gateway, the gateway's key for it wrong: its first call marks it out. */
async function badKeyGateway(t: TestContext, overrides = {}) {
  const box = await startFake('llamacpp', { models: ['m'], apiKey: 'sk-right-key' });
  const gw = await startGateway([{ name: 'badkey', url: box.url, api_key: 'sk-wrong-key' }], overrides);
  t.after(async () => {
    await gw.close();
    await box.close();
  });
  return gw;
}

/** Serves `/v1/models` with model `m` while `up`, else a 500: a backend whose health check fails. */
async function flakyModels(t: TestContext): Promise<{ url: string; setUp(up: boolean): void }> {
  let up = true;
  const server: Server = createServer((req, res) => {
    if (!up) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error');
      return;
    }
    const list = { object: 'list', data: [{ id: 'm', object: 'model' }] };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(list));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setUp: (v) => {
      up = v;
    },
  };
}

describe('each reason, in the OpenAI shape', () => {
  test('credential refused (401): one sentence naming the backend, the status and how long ago', async (t) => {
    const gw = await badKeyGateway(t);
    const client = openai(gw);
    const first = await chatError(client, 'badkey/m');
    assert.equal(first.status, 502, 'the call that met the refusal says so itself');
    const err = await chatError(client, 'badkey/m');
    assert.equal(err.status, 503);
    const error = bodyError(err);
    assert.equal(error.code, 'no_healthy_backend');
    assert.match(error.message, /^`badkey` is out: the upstream refused the gateway's credential \(401\) \d+ s ago\.$/);
    assert.equal(error.candidates?.length, 1);
    const [only] = error.candidates!;
    const expected = { backend: 'badkey', reason: 'credential_refused', status: 401, since_s: undefined };
    assert.deepEqual({ ...only, since_s: undefined }, expected);
    assert.ok(only.since_s >= 0 && only.since_s <= 2, String(only.since_s));
  });

  test('unreachable (closed port): the backend is out, the gateway could not reach it', async (t) => {
    const box = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'gone', url: box.url }]);
    t.after(() => gw.close());
    await box.close();
    await gw.gateway.discovery.pollAll();
    const err = await chatError(openai(gw), 'gone/m');
    assert.equal(err.status, 503);
    assert.match(bodyError(err).message, /^`gone` is out: the gateway could not reach it \d+ s ago\.$/);
    assert.deepEqual(
      bodyError(err).candidates?.map((c) => [c.backend, c.reason]),
      [['gone', 'unreachable']],
    );
  });

  test('loading (llama.cpp 503 "Loading model" on its health check)', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway([{ name: 'warming', url: box.url }]);
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    box.setKnobs({ loadingMs: 60_000 });
    await gw.gateway.discovery.pollAll();
    const err = await chatError(openai(gw), 'warming/m');
    assert.equal(err.status, 503);
    assert.match(bodyError(err).message, /^`warming` is out: it is loading its model \(503\), for \d+ s now\.$/);
    assert.deepEqual(
      bodyError(err).candidates?.map((c) => [c.reason, c.status]),
      [['loading', 503]],
    );
  });

  test('circuit open until T: out after a failed health check, checked again by the next interval', async (t) => {
    const flaky = await flakyModels(t);
    const gw = await startGateway([{ name: 'flaky', url: flaky.url }], { health_check_interval: 30 });
    t.after(() => gw.close());
    flaky.setUp(false);
    const checked = Date.now();
    await gw.gateway.discovery.pollAll();
    const err = await chatError(openai(gw), 'flaky/m');
    assert.equal(err.status, 503);
    const error = bodyError(err);
    assert.match(
      error.message,
      new RegExp(
        '^`flaky` is out after a failed health check \\(HTTP 500\\) \\d+ s ago; ' +
          'it is checked again by \\d\\d:\\d\\d:\\d\\d UTC \\(in (29|30) s\\)\\.$',
      ),
    );
    const [only] = error.candidates!;
    assert.equal(only.reason, 'circuit_open');
    assert.equal(only.status, 500);
    const until = Date.parse(only.until);
    assert.ok(Math.abs(until - (checked + 30_000)) < 2000, `until ${only.until}`);
    const health = (await (await fetch(`${gw.url}/health`)).json()) as { backends: Record<string, { out: any }> };
    const { backend: _name, ...reason } = only;
    const out = { ...health.backends.flaky.out, since_s: 0 };
    assert.deepEqual(out, { ...reason, since_s: 0 }, '/health says why it is out too');
  });

  test('draining and disabled, several candidates: a short list, each with its reason', async (t) => {
    const a = await startFake('llamacpp', { models: ['m'] });
    const b = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway(
      [
        { name: 'drained', url: a.url },
        { name: 'off', url: b.url },
      ],
      {
        virtual_models: { pool: { drained: 'm', off: 'm' } },
      },
    );
    t.after(async () => {
      await gw.close();
      await a.close();
      await b.close();
    });
    const drain = await fetch(`${gw.url}/admin/api/backends/drained/drain`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ on: true }),
    });
    assert.equal(drain.status, 200);
    const cfg = gw.gateway.config();
    const backends = [backendSpec({ name: 'drained', url: a.url }), backendSpec({ name: 'off', url: b.url })];
    backends[1].enabled = false;
    gw.gateway.reload({ ...cfg, backends });
    const err = await chatError(openai(gw), 'pool');
    assert.equal(err.status, 503);
    const error = bodyError(err);
    assert.match(
      error.message,
      new RegExp(
        '^No backend can serve `pool` right now: `drained` is draining ' +
          '\\(no new calls while its running ones finish\\), for \\d+ s now; `off` is disabled\\.$',
      ),
    );
    const reasons = error.candidates?.map((c) => [c.backend, c.reason]);
    assert.deepEqual(reasons, [
      ['drained', 'draining'],
      ['off', 'disabled'],
    ]);
    assert.equal(typeof error.candidates![0].since_s, 'number');
    const health = (await (await fetch(`${gw.url}/health`)).json()) as { backends: Record<string, { out: any }> };
    const out = [health.backends.drained.out?.reason, health.backends.off.out];
    assert.deepEqual(out, ['draining', { reason: 'disabled' }]);
  });

  test('parked past park_timeout_s with N ahead: how long it waited and how many were served first', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 2500 } });
    const gw = await startGateway([{ name: 'box', url: box.url, max_concurrent: 1 }], {
      park_timeout_s: 0.5,
      virtual_models: { patient: 'box/m' },
      alias_park: { patient: 10 },
    });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const client = openai(gw);
    const hog = client.chat.completions.create({ model: 'box/m', messages: hi });
    await waitFor(() => box.inflight === 1, 'box is busy');
    const leave = new AbortController();
    const waitLong = () => client.chat.completions.create({ model: 'patient', messages: hi }, { signal: leave.signal });
    const patient = [1, 2].map(() =>
      waitLong().catch((err: unknown) => assert.ok(err instanceof OpenAI.APIUserAbortError, String(err))),
    );
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 2, 'two calls parked ahead');
    const err = await chatError(client, 'box/m');
    assert.equal(err.status, 503);
    assert.equal(err.headers?.get('retry-after'), '2');
    const error = bodyError(err);
    assert.equal(error.code, 'park_timeout');
    assert.equal(error.message, '`box` stayed busy for the whole 0.5 s wait, with 2 calls ahead. Retry shortly.');
    assert.deepEqual(error.candidates, [{ backend: 'box', reason: 'park_timeout', ahead: 2 }]);
    leave.abort(); // the calls ahead have made their point
    await Promise.all([hog, ...patient]);
  });

  test('a stream whose head is out (keep-alive while parked) gets the reasons in its error event', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 2500 } });
    const gw = await startGateway([{ name: 'box', url: box.url, max_concurrent: 1 }], {
      park_timeout_s: 0.6,
      stream_keepalive_s: 0.1,
    });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const client = openai(gw);
    const hog = client.chat.completions.create({ model: 'box/m', messages: hi });
    await waitFor(() => box.inflight === 1, 'box is busy');
    const stream = await client.chat.completions.create({ model: 'box/m', messages: hi, stream: true });
    const err = await (async () => {
      for await (const chunk of stream) assert.fail(`a chunk arrived: ${JSON.stringify(chunk)}`);
    })().then(
      () => assert.fail('the stream ended cleanly'),
      (e: unknown) => e as OpenAIError,
    );
    assert.ok(err instanceof OpenAI.APIError, String(err));
    const error = bodyError(err);
    assert.equal(error.code, 'park_timeout');
    assert.deepEqual(error.candidates, [{ backend: 'box', reason: 'park_timeout', ahead: 0 }]);
    await hog;
  });

  test('embeddings and completions refuse the same way (one proxy, one explanation)', async (t) => {
    const gw = await badKeyGateway(t);
    const client = openai(gw);
    await chatError(client, 'badkey/m');
    for (const call of [
      () => client.embeddings.create({ model: 'badkey/m', input: 'x' }),
      () => client.completions.create({ model: 'badkey/m', prompt: 'x' }),
    ]) {
      const err = await call().then(
        () => assert.fail('served'),
        (e: unknown) => e as OpenAIError,
      );
      assert.equal(err.status, 503);
      assert.deepEqual(
        bodyError(err).candidates?.map((c) => c.reason),
        ['credential_refused'],
      );
    }
  });
});

describe('the Anthropic shape on /v1/messages', () => {
  test('the Messages API gets the same reasons inside its own error body', async (t) => {
    const gw = await badKeyGateway(t);
    await chatError(openai(gw), 'badkey/m');
    const err = await anthropic(gw)
      .messages.create({ model: 'badkey/m', max_tokens: 16, messages: hi })
      .then(
        () => assert.fail('served'),
        (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
      );
    assert.ok(err instanceof Anthropic.APIError);
    assert.equal(err.status, 503);
    const body = err.error as { type: string; error: { type: string; message: string; candidates?: any[] } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'overloaded_error');
    assert.match(body.error.message, /^`badkey` is out: the upstream refused the gateway's credential \(401\)/);
    const reasons = body.error.candidates?.map((c) => [c.backend, c.reason, c.status]);
    assert.deepEqual(reasons, [['badkey', 'credential_refused', 401]]);
  });
});

describe('who sees backend names', () => {
  const MASTER = 'sk-master-key-for-refusals';

  test('admins see names; a plain user sees the reasons without them, until expose_backend_names: true', async (t) => {
    const gw = await badKeyGateway(t, { api_key: MASTER });
    const admin = openai(gw, MASTER);
    const { key } = gw.gateway.users.create({ name: 'plain' });
    const { key: adminUserKey } = gw.gateway.users.create({ name: 'boss', role: 'admin' });
    await chatError(admin, 'badkey/m');

    const seenByAdmin = bodyError(await chatError(admin, 'badkey/m'));
    assert.equal(seenByAdmin.candidates?.[0].backend, 'badkey');
    assert.equal(bodyError(await chatError(openai(gw, adminUserKey), 'badkey/m')).candidates?.[0].backend, 'badkey');

    const seenByUser = bodyError(await chatError(openai(gw, key), 'badkey/m'));
    const unnamed = /^The backend serving `badkey\/m` is out: the upstream refused the gateway's credential \(401\)/;
    assert.match(seenByUser.message, unnamed);
    assert.equal(seenByUser.message.replace('`badkey/m`', '').includes('badkey'), false, seenByUser.message);
    assert.deepEqual(
      seenByUser.candidates?.map((c) => Object.keys(c).sort()),
      [['reason', 'since_s', 'status']],
    );

    // hot: a setting stored through the admin API applies to the very next refusal
    const put = await fetch(`${gw.url}/admin/api/settings/expose_backend_names`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ value: true }),
    });
    assert.equal(put.status, 200, await put.text());
    assert.equal(bodyError(await chatError(openai(gw, key), 'badkey/m')).candidates?.[0].backend, 'badkey');
  });

  test('the call that meets the refused credential itself (502) names the backend to admins only', async (t) => {
    const gw = await badKeyGateway(t, { api_key: MASTER });
    const { key } = gw.gateway.users.create({ name: 'plain' });
    const plain = bodyError(await chatError(openai(gw, key), 'badkey/m'));
    assert.equal(plain.code, 'upstream_auth_failed');
    assert.match(plain.message, /^The backend refused the gateway's own credential for it \(HTTP 401\)/);
    gw.gateway.registry.discovered('badkey', [{ id: 'm' }]);
    const admin = bodyError(await chatError(openai(gw, MASTER), 'badkey/m'));
    assert.equal(admin.code, 'upstream_auth_failed');
    assert.match(admin.message, /^The backend `badkey` refused the gateway's own credential/);
  });

  test('auto on a single-user gateway (open) shows names; false hides them from its anonymous callers', async (t) => {
    const gw = await badKeyGateway(t);
    const client = openai(gw);
    await chatError(client, 'badkey/m');
    assert.equal(bodyError(await chatError(client, 'badkey/m')).candidates?.[0].backend, 'badkey');
    gw.gateway.reload({ ...gw.gateway.config(), expose_backend_names: false });
    const hidden = bodyError(await chatError(client, 'badkey/m'));
    assert.equal(hidden.candidates?.[0].backend, undefined);
    assert.equal(hidden.candidates?.[0].reason, 'credential_refused');
    assert.match(hidden.message, /^The backend serving `badkey\/m` is out/);
  });
});
