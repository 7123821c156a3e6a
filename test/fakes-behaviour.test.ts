/** The fake backends' knobs and per-kind behaviour do what they say. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { contentWords, embeddingVector, FAKE_KINDS, startFake, startFleet, toBase64Float32 } from './fakes/index.ts';
import {
  CHAT,
  chatBody,
  chunksOf,
  contentOf,
  countContentChunks,
  post,
  streamBody,
  until,
  withFake,
} from './fakes/http-helpers.ts';

describe('streams', () => {
  test('chunkCount words "tok0 tok1 …", usage chunk with choices: [], [DONE] last', () =>
    withFake('vllm', { chunkCount: 5 }, async (f) => {
      const res = await post(f, CHAT, streamBody(f));
      assert.equal(res.headers.get('content-type'), 'text/event-stream');
      const { chunks, done } = chunksOf(await res.text());
      assert.ok(done);
      assert.equal(contentOf(chunks), contentWords(5).join(''));
      assert.equal(contentOf(chunks), 'tok0 tok1 tok2 tok3 tok4');
      const last = chunks.at(-1);
      assert.deepEqual(last.choices, []);
      assert.equal(last.usage.completion_tokens, 5);
      assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 5);
    }));

  test('includeUsage false ignores stream_options.include_usage', () =>
    withFake('ollama', { includeUsage: false }, async (f) => {
      const { chunks, done } = chunksOf(await (await post(f, CHAT, streamBody(f))).text());
      assert.ok(done);
      assert.equal(chunks.filter((c) => c.usage !== undefined || c.choices.length === 0).length, 0);
      assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
    }));

  test('no usage chunk unless the client asks for it', () =>
    withFake('together', {}, async (f) => {
      const { chunks } = chunksOf(await (await post(f, CHAT, chatBody(f, { stream: true }))).text());
      assert.ok(chunks.every((c) => c.usage === undefined));
    }));

  test('dropAfterChunks destroys the socket after N content chunks, without [DONE]', () =>
    withFake('llamacpp', { dropAfterChunks: 3 }, async (f) => {
      const res = await post(f, CHAT, streamBody(f));
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let raw = '';
      await assert.rejects(async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          raw += decoder.decode(value, { stream: true });
        }
      }, 'the body ends in a socket error, not a clean end');
      assert.equal(countContentChunks(raw), 3);
      assert.ok(!raw.includes('[DONE]'));
    }));

  test('stallAfterChunks sends N chunks, then nothing while the socket stays open', () =>
    withFake('vllm', { stallAfterChunks: 2 }, async (f) => {
      const ac = new AbortController();
      const res = await post(f, CHAT, streamBody(f), { signal: ac.signal });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let raw = '';
      while (countContentChunks(raw) < 2) {
        const { done, value } = await reader.read();
        assert.ok(!done, 'stream ended early');
        raw += decoder.decode(value, { stream: true });
      }
      const next = reader.read().then(
        () => 'bytes' as const,
        () => 'error' as const,
      );
      const outcome = await Promise.race([next, delay(200).then(() => 'silence' as const)]);
      assert.equal(outcome, 'silence');
      assert.equal(countContentChunks(raw), 2);
      assert.equal(f.inflight, 1, 'a stalled stream is still in flight');
      ac.abort();
      await next;
      await until(() => f.inflight === 0);
      assert.equal(f.inflight, 0, 'the client going away ends the request');
    }));

  test('close() destroys a stalled stream', async () => {
    const f = await startFake('openrouter', { knobs: { stallAfterChunks: 1 } });
    const res = await post(f, CHAT, streamBody(f));
    const reader = res.body!.getReader();
    await reader.read();
    await f.close();
    await assert.rejects(async () => {
      for (;;) if ((await reader.read()).done) break;
    });
  });

  test('tokensPerSecond paces the chunks', () =>
    withFake('ollama', { tokensPerSecond: 100, chunkCount: 6 }, async (f) => {
      const t0 = performance.now();
      const { chunks } = chunksOf(await (await post(f, CHAT, streamBody(f))).text());
      const elapsed = performance.now() - t0;
      assert.equal(contentOf(chunks), contentWords(6).join(''));
      assert.ok(elapsed >= 55, `6 tokens at 100/s take ≥ 60 ms, took ${elapsed.toFixed(0)}`);
    }));

  test('latencyMs delays the response head', () =>
    withFake('together', { latencyMs: 60 }, async (f) => {
      const t0 = performance.now();
      const res = await post(f, CHAT, chatBody(f));
      assert.ok(performance.now() - t0 >= 55);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }));

  test('streamed text completions are text_completion chunks', () =>
    withFake('vllm', { chunkCount: 3 }, async (f) => {
      const res = await post(f, '/v1/completions', {
        model: f.models[0],
        prompt: 'once',
        stream: true,
        stream_options: { include_usage: true },
      });
      const { chunks, done } = chunksOf(await res.text());
      assert.ok(done);
      assert.ok(chunks.every((c) => c.object === 'text_completion'));
      assert.equal(chunks.map((c) => c.choices[0]?.text ?? '').join(''), 'tok0 tok1 tok2');
      assert.deepEqual(chunks.at(-1).choices, []);
    }));
});

describe('non-stream replies', () => {
  test('chat.completion with chunkCount completion tokens, for every kind', async () => {
    const fleet = await startFleet([...FAKE_KINDS]);
    try {
      for (const f of fleet) {
        const res = await post(f, CHAT, chatBody(f));
        const body: any = await res.json();
        assert.equal(res.status, 200, f.kind);
        assert.equal(body.object, 'chat.completion');
        assert.equal(body.choices[0].message.content, 'tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7');
        assert.equal(body.usage.completion_tokens, 8, f.kind);
        assert.equal(body.choices[0].finish_reason, 'stop');
      }
    } finally {
      await Promise.all(fleet.map((f) => f.close()));
    }
  });

  test('max_tokens below chunkCount stops with finish_reason "length"', () =>
    withFake('llamacpp', {}, async (f) => {
      const body: any = await (await post(f, CHAT, chatBody(f, { max_tokens: 3 }))).json();
      assert.equal(body.choices[0].message.content, 'tok0 tok1 tok2');
      assert.equal(body.choices[0].finish_reason, 'length');
      assert.equal(body.usage.completion_tokens, 3);
    }));

  test('toolCall answers a get_weather call', () =>
    withFake('openrouter', { toolCall: true }, async (f) => {
      const body: any = await (await post(f, CHAT, chatBody(f))).json();
      const call = body.choices[0].message.tool_calls[0];
      assert.equal(body.choices[0].finish_reason, 'tool_calls');
      assert.equal(call.function.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.function.arguments), { city: 'New York City', unit: 'celsius' });
    }));

  test('text completions are text_completion objects', () =>
    withFake('ollama', { chunkCount: 2 }, async (f) => {
      const body: any = await (await post(f, '/v1/completions', { model: f.models[0], prompt: 'x' })).json();
      assert.equal(body.object, 'text_completion');
      assert.equal(body.choices[0].text, 'tok0 tok1');
    }));

  test('llama.cpp (and llama-swap) put timings on the final chunk and on non-stream replies', async () => {
    const timingKeys = [
      'prompt_n',
      'prompt_ms',
      'prompt_per_token_ms',
      'prompt_per_second',
      'predicted_n',
      'predicted_ms',
      'predicted_per_token_ms',
      'predicted_per_second',
    ];
    for (const kind of ['llamacpp', 'llamaswap'] as const) {
      await withFake(kind, {}, async (f) => {
        const whole: any = await (await post(f, CHAT, chatBody(f))).json();
        for (const k of timingKeys) assert.equal(typeof whole.timings[k], 'number', `${kind} ${k}`);
        assert.equal(whole.timings.predicted_n, 8);
        for (const include of [true, false]) {
          const { chunks } = chunksOf(
            await (
              await post(f, CHAT, chatBody(f, { stream: true, stream_options: { include_usage: include } }))
            ).text(),
          );
          assert.ok(chunks.at(-1).timings, `${kind} last chunk (include_usage ${include})`);
          assert.ok(chunks.slice(0, -1).every((c) => c.timings === undefined));
        }
      });
    }
  });

  test('OpenRouter usage carries cost and cached tokens', () =>
    withFake('openrouter', {}, async (f) => {
      const body: any = await (await post(f, CHAT, chatBody(f, { model: 'acme/chat-large' }))).json();
      const u = body.usage;
      assert.equal(typeof u.cost, 'number');
      assert.ok(Math.abs(u.cost - (u.prompt_tokens * 0.000003 + u.completion_tokens * 0.000015)) < 1e-12);
      assert.equal(u.prompt_tokens_details.cached_tokens, 0);
      const free: any = await (await post(f, CHAT, chatBody(f, { model: 'acme/tiny-chat:free' }))).json();
      assert.equal(free.usage.cost, 0);
    }));
});

describe('errors', () => {
  test("errorStatus answers in the kind's own shape, or with errorBody", async () => {
    await withFake('llamacpp', { errorStatus: 500 }, async (f) => {
      const res = await post(f, CHAT, chatBody(f));
      assert.equal(res.status, 500);
      assert.deepEqual(Object.keys(((await res.json()) as any).error).sort(), ['code', 'message', 'type']);
      const emb = await post(f, '/v1/embeddings', { model: f.models[0], input: 'x' });
      assert.equal(emb.status, 500);
      await emb.arrayBuffer();
      assert.equal((await fetch(`${f.url}/v1/models`)).status, 200, 'model list is not affected');
    });
    await withFake(
      'openrouter',
      { errorStatus: 429, errorBody: { error: { message: 'slow down', code: 429 } } },
      async (f) => {
        const res = await post(f, CHAT, chatBody(f));
        assert.equal(res.status, 429);
        assert.deepEqual(await res.json(), { error: { message: 'slow down', code: 429 } });
      },
    );
  });

  test('unknown model → 404', async () => {
    for (const kind of FAKE_KINDS) {
      await withFake(kind, {}, async (f) => {
        const res = await post(f, CHAT, chatBody(f, { model: 'no/such-model' }));
        assert.equal(res.status, 404, kind);
        assert.match(await res.text(), /no\/such-model/);
      });
    }
  });

  test('llama.cpp loading: 503 "Loading model" on /health and chat, then 200; setKnobs restarts it', () =>
    withFake('llamacpp', { loadingMs: 300 }, async (f) => {
      const health = await fetch(`${f.url}/health`);
      assert.equal(health.status, 503);
      const loading = { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } };
      assert.deepEqual(await health.json(), loading);
      const chat = await post(f, CHAT, chatBody(f));
      assert.equal(chat.status, 503);
      assert.deepEqual(await chat.json(), loading);
      let ok = await fetch(`${f.url}/health`);
      for (let i = 0; i < 100 && ok.status === 503; i++) {
        await ok.arrayBuffer();
        await delay(10);
        ok = await fetch(`${f.url}/health`);
      }
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { status: 'ok' });
      assert.equal((await post(f, CHAT, chatBody(f))).status, 200);
      f.setKnobs({ loadingMs: 5_000 });
      const again = await fetch(`${f.url}/health`);
      assert.equal(again.status, 503);
      await again.arrayBuffer();
    }));

  test('llama-swap unableToStart → 502 plain text "unable to start process: …"', () =>
    withFake('llamaswap', { unableToStart: true }, async (f) => {
      const res = await post(f, CHAT, chatBody(f));
      assert.equal(res.status, 502);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      assert.match(await res.text(), /^unable to start process: /);
    }));

  test('Together refuses a 0/0 (dedicated-only) chat model with a 400', () =>
    withFake('together', {}, async (f) => {
      const res = await post(f, CHAT, chatBody(f, { model: 'acme/Dedicated-Only-70B' }));
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as any).error.message, /^Unable to access non-serverless model/);
    }));

  test('refuse resets connections, also kept-alive ones; turning it off recovers', () =>
    withFake('vllm', {}, async (f) => {
      await (await fetch(`${f.url}/v1/models`)).arrayBuffer();
      f.setKnobs({ refuse: true });
      await assert.rejects(fetch(`${f.url}/v1/models`), TypeError);
      await assert.rejects(post(f, CHAT, chatBody(f)), TypeError);
      f.setKnobs({ refuse: false });
      assert.equal((await fetch(`${f.url}/v1/models`)).status, 200);
    }));
});

describe('apiKey', () => {
  for (const kind of FAKE_KINDS) {
    test(`${kind}: 401 without the key, 200 with it, headers recorded`, () =>
      withFake(
        kind,
        {},
        async (f) => {
          const missing = await post(f, CHAT, chatBody(f));
          assert.equal(missing.status, 401);
          const text = await missing.text();
          assert.ok(text.length > 0);
          const wrong = await post(f, CHAT, chatBody(f), { headers: { authorization: 'Bearer client-key' } });
          assert.equal(wrong.status, 401);
          await wrong.arrayBuffer();
          const ok = await post(f, CHAT, chatBody(f), { headers: { authorization: 'Bearer sk-backend' } });
          assert.equal(ok.status, 200);
          await ok.arrayBuffer();
          assert.equal(f.requests.at(-1)!.headers.authorization, 'Bearer sk-backend');
          assert.equal(f.requests.at(-2)!.headers.authorization, 'Bearer client-key');
        },
        'sk-backend',
      ));
  }

  test('llama.cpp keeps /health and /v1/models public', () =>
    withFake(
      'llamacpp',
      {},
      async (f) => {
        assert.equal((await fetch(`${f.url}/health`)).status, 200);
        assert.equal((await fetch(`${f.url}/v1/models`)).status, 200);
        assert.equal((await fetch(`${f.url}/slots`)).status, 401);
      },
      'k',
    ));
});

describe('bookkeeping', () => {
  test('inflight and maxInflight count concurrent generations', () =>
    withFake('llamacpp', { latencyMs: 250 }, async (f) => {
      const pending = [1, 2, 3].map((i) =>
        post(f, CHAT, chatBody(f, { messages: [{ role: 'user', content: `m${i}` }] })),
      );
      await until(() => f.inflight === 3);
      assert.equal(f.inflight, 3);
      const slots = (await (await fetch(`${f.url}/slots`)).json()) as any[];
      assert.equal(slots.filter((s) => s.is_processing).length, 3, 'a slot is processing per request in flight');
      await Promise.all((await Promise.all(pending)).map((r) => r.arrayBuffer()));
      await until(() => f.inflight === 0);
      assert.equal(f.inflight, 0);
      assert.equal(f.maxInflight, 3);
      assert.equal((await (await fetch(`${f.url}/v1/models`)).arrayBuffer()).byteLength > 0, true);
      assert.equal(f.maxInflight, 3, 'model lists are not generations');
    }));

  test('requests record method, path, query, headers and body; servedOrder the last user message', () =>
    withFake('ollama', {}, async (f) => {
      const body = {
        model: f.models[0],
        messages: [
          { role: 'user', content: 'first' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: 'second' },
        ],
      };
      await (
        await fetch(`${f.url}/v1/chat/completions?trace=1`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-test': 'yes' },
          body: JSON.stringify(body),
        })
      ).arrayBuffer();
      await (await post(f, '/v1/completions', { model: f.models[0], prompt: 'third' })).arrayBuffer();
      const [r] = f.requests;
      assert.equal(r!.method, 'POST');
      assert.equal(r!.path, '/v1/chat/completions');
      assert.equal(r!.query, 'trace=1');
      assert.equal(r!.headers['x-test'], 'yes');
      assert.deepEqual(r!.body, body);
      assert.ok(r!.endedAt! >= r!.startedAt);
      assert.deepEqual(f.servedOrder, ['second', 'third']);
    }));

  test('servedOrder follows the order responses start', () =>
    withFake('vllm', {}, async (f) => {
      f.setKnobs({ latencyMs: 60 });
      const slow = post(f, CHAT, chatBody(f, { messages: [{ role: 'user', content: 'slow' }] }));
      await until(() => f.requests[0]?.body !== undefined);
      f.setKnobs({ latencyMs: 0 });
      await (await post(f, CHAT, chatBody(f, { messages: [{ role: 'user', content: 'fast' }] }))).arrayBuffer();
      await (await slow).arrayBuffer();
      assert.deepEqual(f.servedOrder, ['fast', 'slow']);
    }));
});

describe('per-kind state', () => {
  test('llama-swap swaps to the requested model, taking loadingMs', () =>
    withFake('llamaswap', { loadingMs: 150 }, async (f) => {
      const running = async () =>
        ((await (await fetch(`${f.url}/running`)).json()) as any).running.map((r: any) => `${r.model}:${r.state}`);
      assert.deepEqual(await running(), [`${f.models[0]}:ready`]);
      const t0 = performance.now();
      const pending = post(f, CHAT, chatBody(f, { model: f.models[1] }));
      await until(() => f.requests.length === 2);
      assert.deepEqual(await running(), [`${f.models[1]}:starting`]);
      assert.equal((await pending).status, 200);
      assert.ok(performance.now() - t0 >= 145);
      assert.deepEqual(await running(), [`${f.models[1]}:ready`]);
      const models: any = await (await fetch(`${f.url}/v1/models`)).json();
      assert.deepEqual(
        models.data.map((m: any) => m.status.value),
        ['unloaded', 'loaded'],
      );
    }));

  test('Ollama /api/ps lists the models it has served', () =>
    withFake('ollama', {}, async (f) => {
      await (await post(f, CHAT, chatBody(f, { model: f.models[1] }))).arrayBuffer();
      const ps: any = await (await fetch(`${f.url}/api/ps`)).json();
      assert.deepEqual(
        ps.models.map((m: any) => m.name),
        f.models,
      );
    }));

  test('custom models are listed, with metadata derived from their ids', async () => {
    const f = await startFake('openrouter', { models: ['x/paint-image', 'x/small:free'] });
    try {
      const body: any = await (await fetch(`${f.url}/v1/models`)).json();
      assert.deepEqual(
        body.data.map((m: any) => m.id),
        ['x/paint-image', 'x/small:free'],
      );
      assert.deepEqual(body.data[0].architecture.output_modalities, ['image', 'text']);
      assert.deepEqual(body.data[1].pricing, { prompt: '0', completion: '0' });
    } finally {
      await f.close();
    }
  });
});

describe('embeddings', () => {
  test('deterministic 8-dim floats; base64 honoured by vLLM, ignored by llama.cpp and Ollama', async () => {
    const fleet = await startFleet(['vllm', 'llamacpp', 'ollama']);
    try {
      const expected = embeddingVector('hello');
      for (const f of fleet) {
        const res = await post(f, '/v1/embeddings', {
          model: f.models[0],
          input: ['hello', 'world'],
          encoding_format: 'base64',
        });
        const body: any = await res.json();
        assert.equal(body.object, 'list');
        assert.equal(body.data.length, 2);
        assert.equal(body.data[1].index, 1);
        assert.equal(body.data[0].object, 'embedding');
        if (f.kind === 'vllm') {
          assert.equal(body.data[0].embedding, toBase64Float32(expected));
          const buf = Buffer.from(body.data[0].embedding, 'base64');
          assert.deepEqual(
            Array.from({ length: 8 }, (_, i) => buf.readFloatLE(i * 4)),
            expected,
          );
        } else {
          assert.deepEqual(body.data[0].embedding, expected, `${f.kind} returns floats`);
        }
        assert.equal(body.usage.prompt_tokens > 0, true);
      }
      const again: any = await (
        await post(fleet[0]!, '/v1/embeddings', { model: fleet[0]!.models[0], input: 'hello' })
      ).json();
      assert.deepEqual(again.data[0].embedding, expected);
      assert.notDeepEqual(embeddingVector('world'), expected);
      assert.equal(expected.length, 8);
    } finally {
      await Promise.all(fleet.map((f) => f.close()));
    }
  });
});
