/**
 * End to end with the official `openai` SDK: the client's own parser judges every answer.
 * Gateway and fake backends are real HTTP servers on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

describe('the openai SDK through the gateway', () => {
  let gpu: FakeBackend;
  let ollama: FakeBackend;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    gpu = await startFake('llamacpp', { models: ['qwen3-8b'] });
    ollama = await startFake('ollama', { models: ['llama3.2:3b', 'nomic-embed-text'] });
    gw = await startGateway(
      [
        { name: 'gpu', url: gpu.url, local: true },
        { name: 'ollama', url: ollama.url, api_key: 'backend-secret-123' },
      ],
      { virtual_models: { fast: 'qwen3-8b', small: { ollama: 'llama3.2:3b' } } },
    );
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key-xyz', maxRetries: 0, timeout: 10_000 });
  });
  after(async () => {
    await gw?.close();
    await gpu?.close();
    await ollama?.close();
  });

  test('lists models: prefixed ids, bare ids of local backends, aliases', async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    for (const id of ['gpu/qwen3-8b', 'qwen3-8b', 'ollama/llama3.2:3b', 'ollama/nomic-embed-text', 'fast', 'small']) {
      assert.ok(ids.includes(id), `${id} listed in ${ids.join(', ')}`);
    }
    assert.ok(!ids.includes('llama3.2:3b'), 'a non-local backend has no bare ids');
    const one = await client.models.retrieve('ollama/llama3.2:3b');
    assert.equal(one.id, 'ollama/llama3.2:3b');
    assert.equal(one.object, 'model');
  });

  test('chat: routed by prefix, alias and bare id, with gateway headers', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'small', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(data.object, 'chat.completion');
    assert.ok(data.choices[0].message.content);
    assert.equal(response.headers.get('x-gateway-backend'), 'ollama');
    assert.ok(response.headers.get('x-request-id'));
    const lastToOllama = ollama.requests.at(-1)!;
    assert.equal(lastToOllama.body.model, 'llama3.2:3b', 'the alias became the real model id');
    assert.equal(
      lastToOllama.headers.authorization,
      'Bearer backend-secret-123',
      "the backend's credential replaced the client's",
    );

    const viaBare = await client.chat.completions
      .create({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(viaBare.response.headers.get('x-gateway-backend'), 'gpu');
    assert.equal(gpu.requests.at(-1)!.headers.authorization, undefined, "the client's key never reaches a backend");
  });

  test('stream with usage: the SDK sees content chunks then a usage chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpu/qwen3-8b',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(text.length > 0);
    assert.ok(usage, 'usage chunk delivered');
    assert.equal(usage!.completion_tokens, gpu.knobs.chunkCount);
  });

  test('stream without include_usage: no usage chunk reaches the client, although the gateway asked for one', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpu/qwen3-8b',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    let usageChunks = 0;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.usage) usageChunks++;
    }
    assert.ok(chunks > 0);
    assert.equal(usageChunks, 0);
    assert.deepEqual(gpu.requests.at(-1)!.body.stream_options, { include_usage: true });
  });

  test('a streamed tool call is assembled by the SDK into valid JSON arguments', async () => {
    gpu.setKnobs({ toolCall: true });
    try {
      const runner = client.chat.completions.stream({
        model: 'gpu/qwen3-8b',
        messages: [{ role: 'user', content: 'weather in Paris?' }],
        tools: [
          {
            type: 'function',
            function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
          },
        ],
      });
      const final = await runner.finalChatCompletion();
      const call = final.choices[0].message.tool_calls?.[0];
      assert.ok(call && call.type === 'function');
      const args = JSON.parse(call.function.arguments);
      assert.equal(typeof args, 'object');
      assert.equal(final.choices[0].finish_reason, 'tool_calls');
    } finally {
      gpu.setKnobs({ toolCall: false });
    }
  });

  test('embeddings: the SDK asks for base64, llama.cpp answers floats, the client still gets its numbers', async () => {
    const res = await client.embeddings.create({ model: 'gpu/qwen3-8b', input: ['hello', 'world'] });
    assert.equal(gpu.requests.at(-1)!.body.encoding_format, 'base64', 'the SDK asked for base64');
    assert.equal(res.data.length, 2);
    for (const d of res.data) {
      assert.ok(Array.isArray(d.embedding) && d.embedding.length > 0);
      assert.ok(d.embedding.every((v) => typeof v === 'number' && Number.isFinite(v)));
    }
    const direct = await fetch(`${gpu.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'qwen3-8b', input: ['hello'] }),
    }).then((r) => r.json() as Promise<{ data: { embedding: number[] }[] }>);
    const expected = direct.data[0].embedding.map((v) => Math.fround(v));
    assert.deepEqual(
      res.data[0].embedding.map((v) => Math.fround(v)),
      expected,
    );
  });

  test('an aborted stream frees its slot and the next request works', async () => {
    gpu.setKnobs({ tokensPerSecond: 50, chunkCount: 100 });
    try {
      const ac = new AbortController();
      const stream = await client.chat.completions.create(
        { model: 'gpu/qwen3-8b', messages: [{ role: 'user', content: 'long' }], stream: true },
        { signal: ac.signal },
      );
      let seen = 0;
      try {
        for await (const _ of stream) {
          if (++seen === 3) ac.abort();
        }
      } catch (err) {
        assert.ok(err instanceof OpenAI.APIUserAbortError || (err as Error).name === 'AbortError', String(err));
      }
      assert.ok(seen < 100, 'the stream stopped early');
      await waitFor(() => gpu.inflight === 0, 'upstream request aborted');
      await waitFor(
        () => gw.gateway.scheduler.snapshot().backends.find((b) => b.name === 'gpu')!.inflight === 0,
        'slot released',
      );
    } finally {
      gpu.setKnobs({ tokensPerSecond: 0, chunkCount: 8 });
    }
    const ok = await client.chat.completions.create({
      model: 'gpu/qwen3-8b',
      messages: [{ role: 'user', content: 'again' }],
    });
    assert.ok(ok.choices[0].message.content);
  });

  test('unknown model: 404 model_not_found; missing model: 400 param model', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'nope/nothing', messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) =>
        err instanceof OpenAI.NotFoundError && (err as InstanceType<typeof OpenAI.APIError>).code === 'model_not_found',
    );
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [] }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { code: string; type: string; message: string; param: string } };
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.param, 'model');
    assert.match(body.error.message, /model/);
    await assert.rejects(
      client.chat.completions.create({ model: 42 as unknown as string, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) =>
        err instanceof OpenAI.BadRequestError && (err as InstanceType<typeof OpenAI.APIError>).param === 'model',
    );
  });

  test('malformed JSON: 400 OpenAI-shaped', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "fast",',
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { code: string; type: string; message: string } };
    assert.equal(body.error.code, 'invalid_json');
    assert.equal(body.error.type, 'invalid_request_error');
  });

  test('oversized body: 413 OpenAI-shaped', async () => {
    const big = JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'x'.repeat(33 * 1024 * 1024) }] });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    assert.equal(res.status, 413);
    const body = (await res.json()) as { error: { code: string } };
    assert.equal(body.error.code, 'request_too_large');
  });

  test('completions endpoint passes through with query string kept', async () => {
    const res = await fetch(`${gw.url}/v1/completions?trace=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fast', prompt: 'Once', max_tokens: 5, custom_field: { keep: true } }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { object: string };
    assert.equal(body.object, 'text_completion');
    const seen = gpu.requests.at(-1)!;
    assert.equal(seen.query, 'trace=1');
    assert.deepEqual(seen.body.custom_field, { keep: true }, 'unknown body fields pass through untouched');
  });
});

describe('model ids in paths', () => {
  test('encoded slashes and colons, a literal %, and a malformed escape', async (t) => {
    const { startFake } = await import('./fakes/index.ts');
    const { startGateway } = await import('./helpers/gateway.ts');
    const fake = await startFake('ollama', { models: ['hf.co/org/model:Q4', '100%-real'] });
    const gw = await startGateway([{ name: 'o', url: fake.url }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const get = (path: string) => fetch(`${gw.url}/v1/models/${path}`);
    assert.equal(
      ((await (await get('o/hf.co%2Forg%2Fmodel%3AQ4')).json()) as { id: string }).id,
      'o/hf.co/org/model:Q4',
    );
    assert.equal(((await (await get('o/hf.co/org/model:Q4')).json()) as { id: string }).id, 'o/hf.co/org/model:Q4');
    assert.equal(((await (await get('o/100%25-real')).json()) as { id: string }).id, 'o/100%-real');
    const bad = await get('o/x%ZZ');
    assert.equal(bad.status, 400);
    const body = (await bad.json()) as { error: { message: string; type: string } };
    assert.equal(body.error.type, 'invalid_request_error');
  });
});
