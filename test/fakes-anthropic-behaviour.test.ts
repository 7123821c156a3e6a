/**
 * The Anthropic fake, driven by the real @anthropic-ai/sdk (and raw fetch where the SDK would
 * hide the wire): messages, thinking, tool use, stops, cache usage, errors, auth, models,
 * count_tokens and the fault knobs.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { ANTHROPIC_FAKE_OAUTH_TOKEN, OAUTH_BETA, parseAnthropicSse } from './fakes/index.ts';
import { messagesBody, rawHeaders, rawPost, readToEnd, sdk, withAnthropic } from './fakes/anthropic-helpers.ts';

const WEATHER_TOOL: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } } },
};
/** The `error` object of an API error's body (typed loosely: the SDK types the body as Object). */
const errorOf = (e: unknown): any => (e as { error?: any }).error?.error;
const textOf = (m: Anthropic.Message) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');

describe('messages', () => {
  test('messages.create: "tok0 … tok7", end_turn, msg_01 id, request id, usage like the real API', () =>
    withAnthropic({}, async (f) => {
      const m = await sdk(f).messages.create({
        model: f.models[0]!,
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(textOf(m), 'tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7');
      assert.equal(m.stop_reason, 'end_turn');
      assert.equal(m.stop_sequence, null);
      assert.match(m.id, /^msg_01/);
      assert.equal(m.model, f.models[0]);
      assert.match(m._request_id ?? '', /^req_01/);
      assert.equal(m.usage.output_tokens, 8);
      assert.equal(m.usage.cache_read_input_tokens, 0);
      assert.equal(m.usage.cache_creation_input_tokens, 0);
      assert.equal(m.usage.service_tier, 'standard');
    }));

  test('stream().finalMessage() with thinking: a signed thinking block, then the text', () =>
    withAnthropic({ knobs: { chunkCount: 4 } }, async (f) => {
      for (const type of ['enabled', 'adaptive'] as const) {
        const thinking = type === 'enabled' ? { type, budget_tokens: 1024 } : { type };
        const stream = sdk(f).messages.stream({
          model: f.models[0]!,
          max_tokens: 2048,
          thinking,
          messages: [{ role: 'user', content: 'think' }],
        } as any);
        const m = await stream.finalMessage();
        assert.deepEqual(
          m.content.map((b) => b.type),
          ['thinking', 'text'],
          type,
        );
        const block = m.content[0] as Anthropic.ThinkingBlock;
        assert.equal(block.thinking, 'thought0 thought1 thought2 thought3');
        assert.ok(block.signature.length > 40, 'a signature arrives in signature_delta');
        assert.equal(textOf(m), 'tok0 tok1 tok2 tok3');
        assert.equal(m.usage.output_tokens, 8, 'thinking tokens are output tokens');
      }
      const plain = await sdk(f)
        .messages.stream(messagesBody(f) as any)
        .finalMessage();
      assert.deepEqual(
        plain.content.map((b) => b.type),
        ['text'],
        'no thinking unless asked',
      );
    }));

  test('tool_use: a toolu_01 block with the knob input, stop_reason tool_use, stream and not', () =>
    withAnthropic({ knobs: { toolUse: 'get_weather', toolInput: { city: 'Paris' } } }, async (f) => {
      const params = {
        model: f.models[0]!,
        max_tokens: 200,
        tools: [WEATHER_TOOL],
        messages: [{ role: 'user' as const, content: 'weather?' }],
      };
      for (const m of [await sdk(f).messages.create(params), await sdk(f).messages.stream(params).finalMessage()]) {
        assert.equal(m.stop_reason, 'tool_use');
        const call = m.content.at(-1) as Anthropic.ToolUseBlock;
        assert.equal(call.type, 'tool_use');
        assert.match(call.id, /^toolu_01/);
        assert.equal(call.name, 'get_weather');
        assert.deepEqual(call.input, { city: 'Paris' });
      }
      const noTool = await sdk(f).messages.create({ ...params, tools: [{ ...WEATHER_TOOL, name: 'other' }] });
      assert.equal(noTool.stop_reason, 'end_turn', 'only a tool the request offers');
    }));

  test('toolUseOnce: the turn that hands back a tool_result gets text, so the loop ends', () =>
    withAnthropic({ knobs: { toolUse: 'get_weather', toolUseOnce: true } }, async (f) => {
      const client = sdk(f);
      const first: Anthropic.MessageParam[] = [{ role: 'user', content: 'weather?' }];
      const a = await client.messages.create({
        model: f.models[0]!,
        max_tokens: 200,
        tools: [WEATHER_TOOL],
        messages: first,
      });
      const call = a.content.at(-1) as Anthropic.ToolUseBlock;
      assert.equal(a.stop_reason, 'tool_use');
      const second: Anthropic.MessageParam[] = [
        ...first,
        { role: 'assistant', content: a.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '21°C' }] },
      ];
      const b = await client.messages.create({
        model: f.models[0]!,
        max_tokens: 200,
        tools: [WEATHER_TOOL],
        messages: second,
      });
      assert.equal(b.stop_reason, 'end_turn');
      assert.ok(b.usage.input_tokens > a.usage.input_tokens, 'the longer conversation counts more input');
    }));

  test('max_tokens cuts the reply (stop_reason max_tokens); a stop sequence stops it (stop_sequence set)', () =>
    withAnthropic({}, async (f) => {
      const client = sdk(f);
      const cut = await client.messages.create(messagesBody(f, { max_tokens: 3 }) as any);
      assert.equal(textOf(cut), 'tok0 tok1 tok2');
      assert.equal(cut.stop_reason, 'max_tokens');
      assert.equal(cut.usage.output_tokens, 3);
      const stopped = await client.messages
        .stream(messagesBody(f, { stop_sequences: ['nope', ' tok3'] }) as any)
        .finalMessage();
      assert.equal(textOf(stopped), 'tok0 tok1 tok2');
      assert.equal(stopped.stop_reason, 'stop_sequence');
      assert.equal(stopped.stop_sequence, ' tok3');
    }));

  test('cache tokens come from the knobs, only when the request has cache_control', () =>
    withAnthropic({ knobs: { cacheReadTokens: 1200, cacheWriteTokens: 300 } }, async (f) => {
      const client = sdk(f);
      const system = [{ type: 'text' as const, text: 'You are terse.', cache_control: { type: 'ephemeral' as const } }];
      const cached = await client.messages.stream(messagesBody(f, { system }) as any).finalMessage();
      assert.equal(cached.usage.cache_read_input_tokens, 1200);
      assert.equal(cached.usage.cache_creation_input_tokens, 300);
      assert.equal(cached.usage.cache_creation?.ephemeral_5m_input_tokens, 300);
      const hour = await client.messages.create(
        messagesBody(f, { system: [{ ...system[0], cache_control: { type: 'ephemeral', ttl: '1h' } }] }) as any,
      );
      assert.equal(hour.usage.cache_creation?.ephemeral_1h_input_tokens, 300);
      const plain = await client.messages.create(messagesBody(f) as any);
      assert.equal(plain.usage.cache_read_input_tokens, 0);
      assert.equal(plain.usage.cache_creation_input_tokens, 0);
    }));
});

describe('errors', () => {
  const CASES: [number, string, new (...a: any[]) => Error][] = [
    [400, 'invalid_request_error', Anthropic.BadRequestError],
    [401, 'authentication_error', Anthropic.AuthenticationError],
    [403, 'permission_error', Anthropic.PermissionDeniedError],
    [404, 'not_found_error', Anthropic.NotFoundError],
    [413, 'request_too_large', Anthropic.ContentTooLargeError],
    [429, 'rate_limit_error', Anthropic.RateLimitError],
    [500, 'api_error', Anthropic.InternalServerError],
    [529, 'overloaded_error', Anthropic.OverloadedError],
  ];
  for (const [status, type, cls] of CASES) {
    test(`errorStatus ${status} reaches the SDK as ${cls.name} (${type}), with the request id`, () =>
      withAnthropic({ knobs: { errorStatus: status } }, async (f) => {
        const err: any = await sdk(f)
          .messages.create(messagesBody(f) as any)
          .then(
            () => undefined,
            (e) => e,
          );
        assert.equal(err instanceof cls, true, `${status}: got ${err?.constructor?.name}`);
        assert.equal(err.status, status);
        assert.equal(err.error.type, 'error');
        assert.equal(errorOf(err).type, type);
        assert.match(err.requestID, /^req_01/);
        assert.equal(err.error.request_id, err.requestID, 'the body names the request-id header');
        if (status === 429 || status === 529) assert.equal(err.headers.get('retry-after'), '1');
      }));
  }

  test('errorCount: N errors (retryAfter as given), then healthy; the model list is not affected', () =>
    withAnthropic({ knobs: { errorStatus: 529, errorCount: 2, retryAfter: '0' } }, async (f) => {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await rawPost(f, '/v1/messages', messagesBody(f));
        statuses.push(res.status);
        if (res.status !== 200) assert.equal(res.headers.get('retry-after'), '0');
        await res.arrayBuffer();
      }
      assert.deepEqual(statuses, [529, 529, 200]);
      assert.equal((await sdk(f, { maxRetries: 3 }).messages.create(messagesBody(f) as any)).stop_reason, 'end_turn');
      assert.equal((await sdk(f).models.list()).data.length, f.models.length);
    }));

  test('missing anthropic-version → 400 with the real message', () =>
    withAnthropic({}, async (f) => {
      const client = sdk(f, { defaultHeaders: { 'anthropic-version': null } });
      const err: any = await client.messages.create(messagesBody(f) as any).catch((e) => e);
      assert.ok(err instanceof Anthropic.BadRequestError);
      assert.equal(errorOf(err).message, 'anthropic-version: header is required');
      assert.equal(f.requests.at(-1)!.headers['anthropic-version'], undefined);
      const models = await fetch(`${f.url}/v1/models`, { headers: { 'x-api-key': rawHeaders()['x-api-key']! } });
      assert.equal(models.status, 400, 'every /v1 call needs it');
      await models.arrayBuffer();
    }));

  test('missing fields name the field, as pydantic words it; unknown model → 404 "model: <id>"', () =>
    withAnthropic({}, async (f) => {
      const body = messagesBody(f);
      for (const field of ['max_tokens', 'messages', 'model']) {
        const { [field]: _gone, ...rest } = body;
        const res = await rawPost(f, '/v1/messages', rest);
        assert.equal(res.status, 400, field);
        assert.deepEqual(((await res.json()) as any).error, {
          type: 'invalid_request_error',
          message: `${field}: Field required`,
        });
      }
      const err: any = await sdk(f)
        .messages.create(messagesBody(f, { model: 'claude-nope' }) as any)
        .catch((e) => e);
      assert.ok(err instanceof Anthropic.NotFoundError);
      assert.equal(errorOf(err).message, 'model: claude-nope');
    }));
});

describe('auth', () => {
  test("x-api-key and the SDK's API-key bearer pass; a wrong or missing key → 401 authentication_error", () =>
    withAnthropic({ apiKey: 'sk-ant-api03-right' }, async (f) => {
      assert.equal(
        (await sdk(f, { apiKey: 'sk-ant-api03-right' }).messages.create(messagesBody(f) as any)).stop_reason,
        'end_turn',
      );
      const ok = await rawPost(f, '/v1/messages', messagesBody(f), rawHeaders({ 'x-api-key': 'sk-ant-api03-right' }));
      assert.equal(ok.status, 200);
      await ok.arrayBuffer();
      const err: any = await sdk(f, { apiKey: 'sk-ant-api03-wrong' })
        .messages.create(messagesBody(f) as any)
        .catch((e) => e);
      assert.ok(err instanceof Anthropic.AuthenticationError);
      const wrong = await rawPost(f, '/v1/messages', messagesBody(f), rawHeaders({ 'x-api-key': 'nope' }));
      assert.deepEqual(((await wrong.json()) as any).error, {
        type: 'authentication_error',
        message: 'invalid x-api-key',
      });
      const { 'x-api-key': _k, ...noKey } = rawHeaders();
      const missing = await rawPost(f, '/v1/messages', messagesBody(f), noKey);
      assert.equal(missing.status, 401);
      assert.equal(((await missing.json()) as any).error.message, 'x-api-key header is required');
    }));

  test('an OAuth bearer needs the oauth-2025-04-20 beta', () =>
    withAnthropic({}, async (f) => {
      const bare = sdk(f, { apiKey: null, authToken: ANTHROPIC_FAKE_OAUTH_TOKEN });
      const err: any = await bare.messages.create(messagesBody(f) as any).catch((e) => e);
      assert.ok(err instanceof Anthropic.AuthenticationError);
      assert.equal(errorOf(err).message, 'OAuth authentication is currently not supported.');
      const beta = sdk(f, {
        apiKey: null,
        authToken: ANTHROPIC_FAKE_OAUTH_TOKEN,
        defaultHeaders: { 'anthropic-beta': `fine-grained-tool-streaming-2025-05-14,${OAUTH_BETA}` },
      });
      assert.equal((await beta.messages.create(messagesBody(f) as any)).stop_reason, 'end_turn');
      assert.equal(f.requests.at(-1)!.headers.authorization, `Bearer ${ANTHROPIC_FAKE_OAUTH_TOKEN}`);
      const wrong = sdk(f, {
        apiKey: null,
        authToken: 'sk-ant-oat01-other',
        defaultHeaders: { 'anthropic-beta': OAUTH_BETA },
      });
      assert.ok(
        (await wrong.messages.create(messagesBody(f) as any).catch((e) => e)) instanceof Anthropic.AuthenticationError,
      );
    }));
});

describe('models', () => {
  const MANY = Array.from(
    { length: 25 },
    (_, i) => `claude-test-${String(i).padStart(2, '0')}-202501${String(i + 1).padStart(2, '0')}`,
  );

  test('paginated newest first: limit (default 20), after_id, before_id, has_more, first_id/last_id', () =>
    withAnthropic({ models: MANY }, async (f) => {
      const client = sdk(f);
      const newestFirst = [...MANY].reverse();
      const page = await client.models.list();
      assert.equal(page.data.length, 20);
      assert.equal(page.has_more, true);
      assert.equal(page.first_id, newestFirst[0]);
      assert.equal(page.last_id, newestFirst[19]);
      assert.deepEqual(page.data[0], {
        type: 'model',
        id: newestFirst[0],
        display_name: 'Claude Test 24',
        created_at: '2025-01-25T00:00:00Z',
      });
      const all: string[] = [];
      for await (const m of client.models.list({ limit: 7 })) all.push(m.id);
      assert.deepEqual(all, newestFirst, 'the SDK pages through after_id to the end');
      const next = await client.models.list({ after_id: newestFirst[19]!, limit: 10 });
      assert.deepEqual([next.data.length, next.has_more], [5, false]);
      const before = await client.models.list({ before_id: newestFirst[10]!, limit: 3 });
      assert.deepEqual(
        before.data.map((m) => m.id),
        newestFirst.slice(7, 10),
      );
      assert.equal(before.has_more, true, 'more in the before direction');
      const err: any = await client.models.list({ limit: 1001 }).catch((e) => e);
      assert.ok(err instanceof Anthropic.BadRequestError);
      assert.deepEqual((await client.models.retrieve(MANY[3]!)).id, MANY[3]);
    }));

  test('modelsStatus answers the model list with that error (a subscription token cannot list)', () =>
    withAnthropic({ knobs: { modelsStatus: 403 } }, async (f) => {
      const err: any = await sdk(f)
        .models.list()
        .catch((e) => e);
      assert.ok(err instanceof Anthropic.PermissionDeniedError);
      f.setKnobs({ modelsStatus: 401 });
      assert.ok(
        (await sdk(f)
          .models.list()
          .catch((e) => e)) instanceof Anthropic.AuthenticationError,
      );
      assert.equal(
        (await sdk(f).messages.create(messagesBody(f) as any)).stop_reason,
        'end_turn',
        'messages still work',
      );
    }));
});

describe('count_tokens', () => {
  test('a deterministic count that grows with the prompt, the system prompt and the tools; equals usage.input_tokens', () =>
    withAnthropic({}, async (f) => {
      const client = sdk(f);
      const base = { model: f.models[0]!, messages: [{ role: 'user' as const, content: 'hello there' }] };
      const count = async (extra: object) => (await client.messages.countTokens({ ...base, ...extra })).input_tokens;
      const plain = await count({});
      assert.equal(await count({}), plain);
      assert.ok(
        (await count({ messages: [{ role: 'user', content: 'hello there, and a much longer question follows' }] })) >
          plain,
      );
      assert.ok((await count({ system: 'You are a careful assistant who answers briefly.' })) > plain);
      assert.ok((await count({ tools: [WEATHER_TOOL] })) > plain);
      const m = await client.messages.create({ ...base, max_tokens: 10 });
      assert.equal(m.usage.input_tokens, plain);
      const extra = await rawPost(f, '/v1/messages/count_tokens', { ...base, max_tokens: 10 });
      assert.equal(extra.status, 400);
      assert.equal(((await extra.json()) as any).error.message, 'max_tokens: Extra inputs are not permitted');
    }));
});

describe('faults and bookkeeping', () => {
  test('overloadedMidStream: N deltas, then event: error overloaded_error and the end (no message_stop)', () =>
    withAnthropic({ knobs: { overloadedMidStream: 3 } }, async (f) => {
      const res = await rawPost(f, '/v1/messages', messagesBody(f, { stream: true }));
      const { text, outcome } = await readToEnd(res);
      assert.equal(outcome, 'end');
      const events = parseAnthropicSse(text).events;
      assert.equal(events.filter((e) => e.event === 'content_block_delta').length, 3);
      assert.deepEqual(events.at(-1), {
        event: 'error',
        data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      });
      const err: any = await sdk(f)
        .messages.stream(messagesBody(f) as any)
        .finalMessage()
        .catch((e) => e);
      assert.ok(err instanceof Anthropic.APIError);
      assert.equal(errorOf(err).type, 'overloaded_error');
      const whole: any = await sdk(f)
        .messages.create(messagesBody(f) as any)
        .catch((e) => e);
      assert.ok(whole instanceof Anthropic.OverloadedError, 'non-stream: a 529');
    }));

  test('dropAfterEvents destroys the socket after N events; refuse resets connections', () =>
    withAnthropic({ knobs: { dropAfterEvents: 4 } }, async (f) => {
      const { text, outcome } = await readToEnd(await rawPost(f, '/v1/messages', messagesBody(f, { stream: true })));
      assert.equal(outcome, 'error');
      assert.equal(parseAnthropicSse(text).events.length, 4);
      // A cut stream is not an HTTP error: the SDK rethrows the transport's failure as an AnthropicError.
      assert.ok(
        (await sdk(f)
          .messages.stream(messagesBody(f) as any)
          .finalMessage()
          .catch((e) => e)) instanceof Anthropic.AnthropicError,
      );
      f.setKnobs({ dropAfterEvents: -1, refuse: true });
      assert.ok(
        (await sdk(f)
          .messages.create(messagesBody(f) as any)
          .catch((e) => e)) instanceof Anthropic.APIConnectionError,
      );
      f.setKnobs({ refuse: false });
      assert.equal((await sdk(f).messages.create(messagesBody(f) as any)).stop_reason, 'end_turn');
    }));

  test('headThenSilence: a 200 event-stream head, then nothing until the client goes away', () =>
    withAnthropic({ knobs: { headThenSilence: true } }, async (f) => {
      const ac = new AbortController();
      const res = await fetch(`${f.url}/v1/messages`, {
        method: 'POST',
        headers: rawHeaders(),
        body: JSON.stringify(messagesBody(f, { stream: true })),
        signal: ac.signal,
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      const next = res.body!.getReader().read();
      assert.equal(
        await Promise.race([
          next.then(
            () => 'bytes',
            () => 'error',
          ),
          delay(150).then(() => 'silence'),
        ]),
        'silence',
      );
      assert.equal(f.inflight, 1);
      ac.abort();
      await next.catch(() => {});
    }));

  test('latencyMs and tokensPerSecond pace the answer', () =>
    withAnthropic({ knobs: { latencyMs: 40, tokensPerSecond: 100, chunkCount: 5 } }, async (f) => {
      const t0 = performance.now();
      await sdk(f)
        .messages.stream(messagesBody(f) as any)
        .finalMessage();
      assert.ok(performance.now() - t0 >= 80, '40 ms + 5 tokens at 100/s');
    }));

  test('requests record method, path, query, headers, the exact raw body and the parsed one; inflight counts', () =>
    withAnthropic({ knobs: { latencyMs: 100 } }, async (f) => {
      const raw = '{ "model" : "' + f.models[0] + '", "max_tokens": 5, "messages": [{"role":"user","content":"é"}] }';
      const pending = [rawPost(f, '/v1/messages?beta=true', raw), rawPost(f, '/v1/messages', raw)];
      await delay(50);
      assert.equal(f.inflight, 2);
      await Promise.all((await Promise.all(pending)).map((r) => r.arrayBuffer()));
      assert.equal(f.maxInflight, 2);
      const r = f.requests[0]!;
      assert.equal(r.method, 'POST');
      assert.equal(r.path, '/v1/messages');
      assert.equal(r.query, 'beta=true');
      assert.equal(r.headers['anthropic-version'], '2023-06-01');
      assert.equal(r.rawBody, raw);
      assert.equal(r.body.messages[0].content, 'é');
      const bad = await rawPost(f, '/v1/messages', 'not json');
      assert.equal(bad.status, 400);
      await bad.arrayBuffer();
      assert.deepEqual([f.requests.at(-1)!.rawBody, f.requests.at(-1)!.body], ['not json', undefined]);
    }));
});
