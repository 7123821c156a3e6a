/**
 * The fakes against the real captures in test/fixtures/llm: every field a real body has,
 * at every level, with the same JSON type; streams framed and shaped like OpenAI's.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertSameShape, FAKE_KINDS, parseSse, startFake, type FakeBackend, type FakeKind } from './fakes/index.ts';
import { readFixture, readFixtureJson } from './helpers/fixtures.ts';

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.json() };
}

describe('assertSameShape', () => {
  const fixture = { a: 1, b: { c: 'x', d: [{ e: true, f: null }] }, g: [] as unknown[] };

  test('accepts the same shape with other values and extra fields', () => {
    assertSameShape({ a: 2, b: { c: 'y', d: [{ e: false, f: null, extra: 1 }] }, g: [1], h: 0 }, fixture);
  });

  test('names the path of a missing field', () => {
    assert.throws(
      () => assertSameShape({ a: 1, b: { c: 'x', d: [{ f: null }] }, g: [] }, fixture),
      /\$\.b\.d\[0\]\.e: missing/,
    );
  });

  test('names the path of a changed type', () => {
    assert.throws(
      () => assertSameShape({ a: '1', b: fixture.b, g: [] }, fixture),
      /\$\.a: expected number, got string/,
    );
    assert.throws(
      () => assertSameShape({ a: 1, b: { c: 'x', d: [{ e: true, f: 0 }] }, g: [] }, fixture),
      /\$\.b\.d\[0\]\.f: expected null, got number/,
    );
  });

  test('an empty array cannot stand in for a non-empty one', () => {
    assert.throws(
      () => assertSameShape({ a: 1, b: { c: 'x', d: [] }, g: [] }, fixture),
      /\$\.b\.d: expected a non-empty array/,
    );
  });

  test('ignored paths may differ', () => {
    assertSameShape({ a: 1, b: { c: 'x', d: [{ e: true }] }, g: [] }, fixture, '$', { ignore: ['$.b.d[0].f'] });
  });

  test('a real fixture fails against a mutated copy of itself', () => {
    const real = readFixtureJson<any>('llm/vllm/v1_models.json');
    assertSameShape(structuredClone(real), real);
    const mutated = structuredClone(real);
    delete mutated.data[0].permission[0].allow_view;
    assert.throws(() => assertSameShape(mutated, real), /\$\.data\[0\]\.permission\[0\]\.allow_view: missing/);
    const retyped = structuredClone(real);
    retyped.data[0].max_model_len = '32768';
    assert.throws(() => assertSameShape(retyped, real), /max_model_len: expected number, got string/);
  });
});

describe('status and model-list bodies match the real captures', () => {
  const fakes = new Map<FakeKind, FakeBackend>();
  before(async () => {
    for (const kind of FAKE_KINDS) fakes.set(kind, await startFake(kind));
  });
  after(async () => {
    await Promise.all([...fakes.values()].map((f) => f.close()));
  });
  const fake = (kind: FakeKind) => fakes.get(kind)!;

  /** The fake's body at `path` must have the fixture's shape (status 200 unless said). */
  async function conforms(kind: FakeKind, path: string, fixture: string, status = 200): Promise<any> {
    const origin = `http://127.0.0.1:${fake(kind).port}`;
    const res = await getJson(origin + path);
    assert.equal(res.status, status, `${kind} ${path}`);
    assertSameShape(res.body, readFixtureJson(fixture), '$');
    return res.body;
  }

  test('llama.cpp /v1/models, /health, /props, /slots', async () => {
    const models = await conforms('llamacpp', '/v1/models', 'llm/llamacpp/v1_models.json');
    assert.ok(Array.isArray(models.models), 'llama-server also lists `models`');
    assert.deepEqual(
      models.data.map((m: any) => m.id),
      fake('llamacpp').models,
    );
    await conforms('llamacpp', '/health', 'llm/llamacpp/health_ok.json');
    await conforms('llamacpp', '/props', 'llm/llamacpp/props.json');
    await conforms('llamacpp', '/slots', 'llm/llamacpp/slots.json');
  });

  test('llama.cpp /health while loading', async () => {
    const f = await startFake('llamacpp', { knobs: { loadingMs: 60_000 } });
    try {
      const res = await getJson(`${f.url}/health`);
      assert.equal(res.status, 503);
      assertSameShape(res.body, readFixtureJson('llm/llamacpp/health_loading_503.json'));
      assert.deepEqual(res.body, readFixtureJson('llm/llamacpp/health_loading_503.json'));
    } finally {
      await f.close();
    }
  });

  test('llama-swap /v1/models and /running (current shape, and the older one)', async () => {
    const models = await conforms('llamaswap', '/v1/models', 'llm/llamaswap/v1_models_ASSEMBLED_current_shape.json');
    assert.deepEqual(
      models.data.map((m: any) => m.status.value),
      ['loaded', 'unloaded'],
    );
    await conforms('llamaswap', '/running', 'llm/llamaswap/running_ASSEMBLED_current_shape.json');
    await conforms('llamaswap', '/running', 'llm/llamaswap/running_older_shape.json');
  });

  test('vLLM /v1/models', async () => {
    await conforms('vllm', '/v1/models', 'llm/vllm/v1_models.json');
  });

  test('Ollama /api/tags, /api/ps, /v1/models', async () => {
    await conforms('ollama', '/api/tags', 'llm/ollama/api_tags_docs.json');
    await conforms('ollama', '/api/ps', 'llm/ollama/api_ps.json');
    await conforms('ollama', '/api/ps', 'llm/ollama/api_ps_docs.json');
    await conforms('ollama', '/v1/models', 'llm/ollama/v1_models.json');
    await conforms('ollama', '/v1/models', 'llm/ollama/v1_models_hf_owner.json');
  });

  test('OpenRouter /api/v1/models, with image-output, :free and 0/0-priced entries', async () => {
    const body = await conforms('openrouter', '/api/v1/models', 'llm/openrouter/api_v1_models_selection.json');
    const fixture = readFixtureJson<any>('llm/openrouter/api_v1_models_selection.json');
    for (const entry of body.data) assertSameShape(entry, fixture.data[0], `$.data[${entry.id}]`);
    const ids = (pred: (m: any) => boolean) => body.data.filter(pred).map((m: any) => m.id);
    assert.ok(ids((m) => m.architecture.output_modalities.includes('image')).length > 0, 'an image-output model');
    assert.ok(ids((m) => m.id.endsWith(':free')).length > 0, 'a :free model');
    assert.ok(
      ids((m) => m.pricing.prompt === '0' && m.pricing.completion === '0' && !m.id.endsWith(':free')).length > 0,
      'a 0/0 model without :free',
    );
    for (const m of body.data) assert.equal(typeof m.pricing.prompt, 'string', 'prices are strings per token');
  });

  test('Together /v1/models is a bare array', async () => {
    const body = await conforms('together', '/v1/models', 'llm/together/v1_models.json');
    assert.ok(Array.isArray(body));
    assert.deepEqual(new Set(body.map((m: any) => m.type)), new Set(['chat', 'embedding', 'image']));
  });
});

/**
 * Fields the OpenAI capture has that a kind's real server does not send (so the fake omits
 * them too): llama.cpp and Ollama have no per-choice logprobs; only OpenAI sends `refusal`;
 * vLLM, OpenRouter and Together send no system_fingerprint; only OpenRouter has
 * completion_tokens_details.
 */
const STREAM_OMISSIONS: Record<FakeKind, string[]> = {
  llamacpp: ['$.choices[0].logprobs', '$.choices[0].delta.refusal', '$.usage.completion_tokens_details'],
  llamaswap: ['$.choices[0].logprobs', '$.choices[0].delta.refusal', '$.usage.completion_tokens_details'],
  vllm: ['$.system_fingerprint', '$.choices[0].delta.refusal', '$.usage.completion_tokens_details'],
  ollama: ['$.choices[0].logprobs', '$.choices[0].delta.refusal', '$.usage.completion_tokens_details'],
  openrouter: ['$.system_fingerprint', '$.choices[0].delta.refusal'],
  together: ['$.system_fingerprint', '$.choices[0].delta.refusal', '$.usage.completion_tokens_details'],
};

describe('streamed tool call matches the real OpenAI transcript', () => {
  const fixtureText = readFixture('llm/openai/chat_completions_stream_tool_call_usage.sse.txt');

  test('the fixture itself reads as strict data: framing', () => {
    const parsed = parseSse(fixtureText);
    assert.deepEqual(parsed.strayLines, []);
    assert.equal(parsed.data.at(-1), '[DONE]');
  });

  for (const kind of FAKE_KINDS) {
    test(kind, async (t) => {
      const fake = await startFake(kind, { knobs: { toolCall: true, chunkCount: 6 } });
      t.after(() => fake.close());
      const res = await fetch(`${fake.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: fake.models[0],
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'weather in NYC?' }],
          tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
        }),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      const raw = await res.text();

      const parsed = parseSse(raw);
      assert.deepEqual(parsed.strayLines, [], 'every event is one `data: ` line followed by a blank line');
      assert.ok(parsed.endsWithBlankLine);
      assert.equal(parsed.data.at(-1), '[DONE]', '[DONE] comes last');
      assert.equal(parsed.data.filter((d) => d === '[DONE]').length, 1);

      const chunks = parsed.data.slice(0, -1).map((d) => JSON.parse(d));
      const real = parseSse(fixtureText)
        .data.slice(0, -1)
        .map((d) => JSON.parse(d));
      const ignore = STREAM_OMISSIONS[kind];
      // Roles in the transcript: header chunk, argument chunks, finish chunk, usage chunk.
      const [realHead, realArgs, realFinish, realUsage] = [real[0], real[1], real.at(-2), real.at(-1)];
      assert.equal(chunks.length, 1 + 6 + 2);
      assertSameShape(chunks[0], realHead, '$', { ignore });
      for (const c of chunks.slice(1, 7)) assertSameShape(c, realArgs, '$', { ignore });
      assertSameShape(chunks[7], realFinish, '$', { ignore });
      assertSameShape(chunks[8], realUsage, '$', { ignore });

      const usageChunk = chunks[8];
      assert.deepEqual(usageChunk.choices, [], 'the usage chunk has choices: []');
      assert.equal(usageChunk.usage.completion_tokens, 6);
      assert.equal(chunks[7].choices[0].finish_reason, 'tool_calls');
      for (const c of chunks) assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(new Set(chunks.map((c) => c.id)).size, 1, 'one id for the whole stream');

      const args = chunks
        .slice(1, 7)
        .map((c) => c.choices[0].delta.tool_calls[0].function.arguments)
        .join('');
      assert.deepEqual(JSON.parse(args), { city: 'New York City', unit: 'celsius' });
      assert.equal(chunks[0].choices[0].delta.tool_calls[0].function.name, 'get_weather');
    });
  }

  test('the comparison catches a chunk that lost a field', () => {
    const real = parseSse(fixtureText)
      .data.slice(0, -1)
      .map((d) => JSON.parse(d));
    const broken = structuredClone(real[0]);
    delete broken.choices[0].delta.tool_calls[0].function.name;
    assert.throws(
      () => assertSameShape(broken, real[0]),
      /\$\.choices\[0\]\.delta\.tool_calls\[0\]\.function\.name: missing/,
    );
  });
});

describe('parallel tool calls and reasoning keep the real OpenAI shapes', () => {
  const parallelText = readFixture('llm/openai/chat_completions_stream_parallel_tool_calls_usage.sse.txt');
  const real = () =>
    parseSse(parallelText)
      .data.slice(0, -1)
      .map((d) => JSON.parse(d));
  /** The capture's chunks by role: role-only head, first header, argument slice, second header, finish, usage. */
  const roles = () => {
    const r = real();
    const secondHeader = r.find(
      (c) => c.choices[0]?.delta?.tool_calls?.[0]?.index === 1 && c.choices[0].delta.tool_calls[0].id,
    );
    return { head: r[0], header: r[1], args: r[2], secondHeader, finish: r.at(-2), usage: r.at(-1) };
  };
  const TOOLS = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];

  async function stream(kind: FakeKind, knobs: Record<string, unknown>): Promise<any[]> {
    const fake = await startFake(kind, { knobs });
    try {
      const res = await fetch(`${fake.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: fake.models[0],
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'two lookups' }],
          tools: TOOLS,
        }),
      });
      const parsed = parseSse(await res.text());
      assert.deepEqual(parsed.strayLines, []);
      assert.equal(parsed.data.at(-1), '[DONE]');
      return parsed.data.slice(0, -1).map((d) => JSON.parse(d));
    } finally {
      await fake.close();
    }
  }

  const argsOf = (chunks: any[], index: number) =>
    chunks
      .flatMap((c) => c.choices[0]?.delta?.tool_calls ?? [])
      .filter((t: any) => t.index === index)
      .map((t: any) => t.function?.arguments ?? '')
      .join('');

  for (const kind of FAKE_KINDS) {
    test(`${kind}: parallelToolCalls 2 with toolCallName/Arguments`, async () => {
      const args = '{"q":"alpha","n":2}';
      const chunks = await stream(kind, {
        toolCall: true,
        parallelToolCalls: 2,
        toolCallName: 'lookup',
        toolCallArguments: args,
        chunkCount: 4,
      });
      const ignore = STREAM_OMISSIONS[kind];
      const r = roles();
      assert.equal(chunks.length, 1 + 4 + 1 + 4 + 2, 'head+header 0, 4 slices, header 1, 4 slices, finish, usage');
      assertSameShape(chunks[0], r.head, '$', { ignore });
      assertSameShape(chunks[0], r.header, '$', { ignore });
      for (const i of [1, 2, 3, 4, 6, 7, 8, 9]) assertSameShape(chunks[i], r.args, '$', { ignore });
      assertSameShape(chunks[5], r.secondHeader, '$', { ignore });
      assertSameShape(chunks[10], r.finish, '$', { ignore });
      assertSameShape(chunks[11], r.usage, '$', { ignore });
      const headers = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []).filter((t: any) => t.id);
      assert.deepEqual(
        headers.map((t: any) => [t.index, t.function.name]),
        [
          [0, 'lookup'],
          [1, 'lookup'],
        ],
        'consecutive indexes',
      );
      assert.notEqual(headers[0].id, headers[1].id);
      assert.equal(argsOf(chunks, 0), args);
      assert.equal(argsOf(chunks, 1), args);
      assert.equal(chunks[11].usage.completion_tokens, 8);
    });

    test(`${kind}: reasoningChunks before a tool call: role head, reasoning, then the capture's header/slice shapes`, async () => {
      const chunks = await stream(kind, { toolCall: true, reasoningChunks: 3, chunkCount: 2 });
      const ignore = STREAM_OMISSIONS[kind];
      const r = roles();
      assert.equal(chunks.length, 1 + 3 + 1 + 2 + 2);
      assertSameShape(chunks[0], r.head, '$', { ignore });
      assert.equal(
        chunks[0].choices[0].delta.tool_calls,
        undefined,
        'the head carries no call when reasoning comes first',
      );
      const field = ['llamacpp', 'llamaswap', 'vllm'].includes(kind) ? 'reasoning_content' : 'reasoning';
      assert.deepEqual(
        chunks.slice(1, 4).map((c) => c.choices[0].delta[field]),
        ['reason0', ' reason1', ' reason2'],
      );
      assertSameShape(chunks[4], r.header, '$', { ignore });
      for (const c of chunks.slice(5, 7)) assertSameShape(c, r.args, '$', { ignore });
      assertSameShape(chunks[7], r.finish, '$', { ignore });
      assertSameShape(chunks[8], r.usage, '$', { ignore });
      assert.equal(chunks[8].usage.completion_tokens, 5, '3 reasoning + 2 argument tokens');
    });
  }
});
