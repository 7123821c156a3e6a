/**
 * /v1/messages fails like Anthropic's API: `{type:"error", error:{type, message}}` with the
 * type per status, `x-should-retry: false` on 401/403/404, upstream retry-after passed on, a
 * quota refusal as rate_limit_error; a stream that breaks closes its open block and ends with
 * an error event, never a made-up message_stop.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { request } from 'undici';
import {
  ANTHROPIC_FAKE_API_KEY,
  startAnthropicFake,
  startFake,
  type AnthropicFake,
  type FakeBackend,
} from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'gw-master-errors';

describe('Anthropic-shaped errors', () => {
  let claude: AnthropicFake;
  let local: FakeBackend;
  let gw: TestGateway;

  const post = (body: unknown, headers: Record<string, string> = { 'x-api-key': MASTER }, path = '/v1/messages') =>
    request(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const ask = (model: string, extra: Record<string, unknown> = {}) => ({
    model,
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });
  const errorOf = async (res: Awaited<ReturnType<typeof post>>) => {
    const body = (await res.body.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    return body.error;
  };

  before(async () => {
    claude = await startAnthropicFake();
    local = await startFake('llamacpp', { models: ['qwen3-8b'] });
    gw = await startGateway(
      [
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY },
        { name: 'local', url: local.url },
      ],
      { api_key: MASTER, virtual_models: { c: { claude: 'claude-sonnet-4-5-20250929' }, l: { local: 'qwen3-8b' } } },
    );
  });
  after(async () => {
    await gw?.close();
    await claude?.close();
    await local?.close();
  });

  test('HEAD / and GET / answer at once without a key', async () => {
    for (const method of ['HEAD', 'GET'] as const) {
      const res = await request(`${gw.url}/`, { method });
      await res.body.text();
      assert.equal(res.statusCode, 200, method);
    }
  });

  test('401, 404 and 400 in Anthropic shape; 401/404 say do not retry', async () => {
    const noKey = await post(ask('c'), {});
    assert.equal(noKey.statusCode, 401);
    assert.equal(noKey.headers['x-should-retry'], 'false');
    assert.equal((await errorOf(noKey)).type, 'authentication_error');

    const unknown = await post(ask('no-such-model'));
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.headers['x-should-retry'], 'false');
    assert.equal((await errorOf(unknown)).type, 'not_found_error');

    const badJson = await post('{"model":');
    assert.equal(badJson.statusCode, 400);
    assert.equal((await errorOf(badJson)).type, 'invalid_request_error');

    const serverTool = await post(
      ask('l', { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }),
    );
    assert.equal(serverTool.statusCode, 400);
    const e = await errorOf(serverTool);
    assert.equal(e.type, 'invalid_request_error');
    assert.match(e.message, /web_search/);
    assert.equal(local.requests.filter((r) => r.method === 'POST').length, 0, 'refused before any backend heard of it');
  });

  test('a quota refusal is rate_limit_error with retry-after', async () => {
    const { key } = gw.gateway.users.create({ name: 'capped', quota_req_day: 1 });
    const first = await post(ask('l'), { 'x-api-key': key });
    assert.equal(first.statusCode, 200, await first.body.text());
    await waitFor(() => gw.gateway.callLog.recent({ status: 200 }).length > 0, 'the first call is counted');
    const second = await post(ask('l'), { 'x-api-key': key });
    assert.equal(second.statusCode, 429);
    assert.ok(Number(second.headers['retry-after']) > 0);
    assert.equal((await errorOf(second)).type, 'rate_limit_error');
  });

  test("upstream errors: Anthropic's passes as it was, a chat backend's is made Anthropic-shaped; retry-after kept", async () => {
    claude.setKnobs({ errorStatus: 529, errorCount: 1, retryAfter: '9' });
    const overloaded = await post(ask('c'));
    assert.equal(overloaded.statusCode, 529);
    assert.equal(overloaded.headers['retry-after'], '9');
    assert.equal((await errorOf(overloaded)).type, 'overloaded_error');

    local.setKnobs({ errorStatus: 429, errorCount: 1, retryAfter: '7' });
    const limited = await post(ask('l'));
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['retry-after'], '7');
    assert.equal((await errorOf(limited)).type, 'rate_limit_error');

    local.setKnobs({ errorStatus: 400, errorCount: 1 });
    const bad = await post(ask('l'));
    assert.equal(bad.statusCode, 400);
    assert.equal((await errorOf(bad)).type, 'invalid_request_error');
  });

  test('a translated stream that breaks closes its block and ends with an error event', async () => {
    local.setKnobs({ dropAfterChunks: 3 });
    try {
      const res = await post(ask('l', { stream: true }));
      const text = await res.body.text();
      const events = [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
      assert.equal(events.at(-1), 'error', text);
      assert.equal(events.at(-2), 'content_block_stop', 'the open text block is closed first');
      assert.ok(!events.includes('message_stop') && !events.includes('message_delta'), 'nothing pretends it finished');
      const sdk = new Anthropic({ baseURL: gw.url, apiKey: MASTER, maxRetries: 0 });
      await assert.rejects(sdk.messages.stream(ask('l') as Anthropic.MessageCreateParams).finalMessage());
      await waitFor(() => gw.gateway.callLog.recent({ backend: 'local', status: 502 }).length >= 1, 'logged as failed');
    } finally {
      local.setKnobs({ dropAfterChunks: -1 });
    }
  });

  test("an anthropic backend's overload mid-stream reaches the client as its error event, logged as failed", async () => {
    claude.setKnobs({ overloadedMidStream: 2 });
    try {
      const res = await post(ask('c', { stream: true }));
      const text = await res.body.text();
      assert.match(text, /event: error\ndata: .*overloaded_error/);
      assert.doesNotMatch(text, /message_stop/);
      assert.equal(text.match(/event: error/g)?.length, 1, 'one error event, not a second one of our own');
      await waitFor(
        () => gw.gateway.callLog.recent({ backend: 'claude', status: 502 }).length >= 1,
        'logged as failed',
      );
    } finally {
      claude.setKnobs({ overloadedMidStream: -1 });
    }
  });

  test("/v1/models: the Anthropic SDK's mistakes in Anthropic's shape, an OpenAI caller's in OpenAI's", async () => {
    const sdk = (apiKey: string) => new Anthropic({ baseURL: gw.url, apiKey, maxRetries: 0, timeout: 10_000 });
    const badKey = await sdk('not-the-key')
      .models.list()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(badKey instanceof Anthropic.AuthenticationError, 'a 401 the SDK names');
    assert.deepEqual(Object.keys(badKey.error as object).sort(), ['error', 'type']);
    assert.equal((badKey.error as { type: string; error: { type: string } }).error.type, 'authentication_error');
    const unknown = await sdk(MASTER)
      .models.retrieve('no-such-model')
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(unknown instanceof Anthropic.NotFoundError);
    const body = unknown.error as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'not_found_error');
    assert.match(body.error.message, /no-such-model/);
    const badLimit = await sdk(MASTER)
      .models.list({ limit: 0 })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(badLimit instanceof Anthropic.BadRequestError);
    assert.equal((badLimit.error as { error: { type: string } }).error.type, 'invalid_request_error');
    const openai = await request(`${gw.url}/v1/models/no-such-model`, {
      headers: { authorization: `Bearer ${MASTER}` },
    });
    assert.equal(openai.statusCode, 404);
    const plain = (await openai.body.json()) as { error: { code: string; type: string } };
    assert.equal(plain.error.code, 'model_not_found', 'no anthropic-version: the OpenAI shape');
  });
});

describe('x-should-retry on Anthropic-shaped /v1/models errors', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway([], { api_key: MASTER });
  });
  after(async () => {
    await gw?.close();
  });

  test('a bad key and an unknown model say x-should-retry: false, as /v1/messages does', async () => {
    const get = async (path: string, key: string, anthropic = true) => {
      const headers: Record<string, string> = { 'x-api-key': key };
      if (anthropic) headers['anthropic-version'] = '2023-06-01';
      const res = await request(`${gw.url}${path}`, { headers });
      await res.body.text();
      return { status: res.statusCode, retry: res.headers['x-should-retry'] };
    };
    assert.deepEqual(await get('/v1/models', 'not-the-key'), { status: 401, retry: 'false' });
    assert.deepEqual(await get('/v1/models/no-such-model', MASTER), { status: 404, retry: 'false' });
    const messages = await request(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'not-the-key', 'content-type': 'application/json' },
      body: '{}',
    });
    await messages.body.text();
    assert.equal(messages.headers['x-should-retry'], 'false', 'the same as /v1/messages');
    assert.deepEqual(
      await get('/v1/models', 'not-the-key', false),
      { status: 401, retry: undefined },
      'an OpenAI caller as before',
    );
  });
});
