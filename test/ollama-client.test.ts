/**
 * The `ollama` npm client through the gateway's native Ollama API, onto a chat backend (a fake
 * llama.cpp): the client's own parser judges every answer, stream and not.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ollama } from 'ollama';
import { startFake, TOOL_NAME, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const KEY = 'gw-master-key-ollama';

describe('the ollama client through the gateway, on a chat backend', () => {
  let gpu: FakeBackend;
  let gw: TestGateway;
  let client: Ollama;
  const inflight = () => gw.gateway.scheduler.snapshot().backends.find((b) => b.name === 'gpu')?.inflight;
  const lastBody = () => gpu.requests.filter((r) => r.method === 'POST').at(-1)!.body;

  before(async () => {
    gpu = await startFake('llamacpp', { models: ['qwen3-8b', 'nomic-embed'] });
    gw = await startGateway([{ name: 'gpu', url: gpu.url, local: true }], { api_key: KEY });
    client = new Ollama({ host: gw.url, headers: { Authorization: `Bearer ${KEY}` } });
  });
  after(async () => {
    await gw?.close();
    await gpu?.close();
  });

  test('list: the models the key may use, as /v1/models lists them', async () => {
    const { models } = await client.list();
    const names = models.map((m) => m.name);
    for (const id of ['qwen3-8b', 'gpu/qwen3-8b', 'nomic-embed']) assert.ok(names.includes(id), names.join(', '));
    const v1 = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    const ids = ((await v1.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    assert.deepEqual([...names].sort(), [...ids].sort());
    assert.match(models[0]!.digest, /^[0-9a-f]{64}$/);
  });

  test('chat, streamed: one line per token, the last one done with statistics in nanoseconds', async () => {
    gpu.setKnobs({ chunkCount: 4 });
    const stream = await client.chat({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const parts = [];
    for await (const part of stream) parts.push(part);
    const last = parts.at(-1)!;
    assert.equal(parts.map((p) => p.message.content).join(''), 'tok0 tok1 tok2 tok3');
    assert.equal(last.done, true);
    assert.equal(last.done_reason, 'stop');
    assert.equal(last.model, 'qwen3-8b');
    assert.equal(last.eval_count, 4);
    assert.ok(last.prompt_eval_count > 0);
    for (const key of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration'] as const) {
      assert.ok(Number.isInteger(last[key]) && last[key] >= 0, `${key} = ${last[key]}`);
    }
    assert.ok(last.total_duration >= last.prompt_eval_duration + last.eval_duration);
    assert.ok(last.total_duration < 10e9, 'nanoseconds of a fast call, not milliseconds times a thousand');
    assert.equal(lastBody().stream, true);
    assert.deepEqual(lastBody().stream_options, { include_usage: true });
  });

  test('chat, not streamed: one object; options map to sampling fields', async () => {
    const options = {
      temperature: 0.2,
      top_p: 0.9,
      top_k: 20,
      num_predict: 64,
      stop: ['END'],
      seed: 7,
      repeat_penalty: 1.1,
    };
    const res = await client.chat({
      model: 'qwen3-8b',
      messages: [{ role: 'user', content: 'hi' }],
      options,
      keep_alive: '5m',
    });
    assert.equal(res.done, true);
    assert.equal(res.message.role, 'assistant');
    assert.ok(res.message.content.startsWith('tok0'));
    const sent = lastBody();
    assert.equal(sent.stream, undefined);
    assert.equal(sent.model, 'qwen3-8b');
    assert.deepEqual(
      [sent.temperature, sent.top_p, sent.top_k, sent.max_tokens, sent.stop, sent.seed, sent.repeat_penalty],
      [0.2, 0.9, 20, 64, ['END'], 7, 1.1],
    );
    assert.equal(sent.keep_alive, undefined, 'keep_alive accepted and left out');
    assert.equal(sent.options, undefined);
  });

  test('generate: system and prompt become a chat; the answer is in `response`', async () => {
    const res = await client.generate({ model: 'qwen3-8b', system: 'be brief', prompt: 'why?', stream: false });
    assert.ok(res.response.startsWith('tok0'));
    assert.equal(res.done, true);
    assert.deepEqual(lastBody().messages, [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'why?' },
    ]);
    const stream = await client.generate({ model: 'qwen3-8b', prompt: 'again', stream: true });
    let text = '';
    for await (const part of stream) text += part.response;
    assert.ok(text.startsWith('tok0 tok1'));
  });

  test('images: base64 images reach the backend as image parts', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==';
    await client.chat({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'what is it?', images: [png] }] });
    assert.deepEqual(lastBody().messages[0].content, [
      { type: 'text', text: 'what is it?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
    ]);
  });

  test('embed and the older embeddings', async () => {
    const one = await client.embed({ model: 'nomic-embed', input: 'hello' });
    assert.equal(one.embeddings.length, 1);
    assert.ok(one.embeddings[0]!.length > 0);
    const two = await client.embed({ model: 'nomic-embed', input: ['a', 'b'] });
    assert.equal(two.embeddings.length, 2);
    assert.notDeepEqual(two.embeddings[0], two.embeddings[1]);
    assert.deepEqual(lastBody().input, ['a', 'b']);
    const old = await client.embeddings({ model: 'nomic-embed', prompt: 'a' });
    assert.deepEqual(old.embedding, two.embeddings[0]);
  });

  test('tools: a call comes back with object arguments; the result goes back by tool name', async () => {
    gpu.setKnobs({ toolCall: true, toolCallOnce: true, chunkCount: 4 });
    try {
      const tools = [
        {
          type: 'function',
          function: {
            name: TOOL_NAME,
            description: 'weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        },
      ];
      const messages: any[] = [{ role: 'user', content: 'weather in NYC?' }];
      const stream = await client.chat({ model: 'qwen3-8b', messages, tools, stream: true });
      const calls = [];
      for await (const part of stream) calls.push(...(part.message.tool_calls ?? []));
      assert.equal(calls.length, 1);
      assert.equal(calls[0]!.function.name, TOOL_NAME);
      assert.deepEqual(calls[0]!.function.arguments, { city: 'New York City', unit: 'celsius' });
      messages.push({ role: 'assistant', content: '', tool_calls: calls });
      messages.push({ role: 'tool', tool_name: TOOL_NAME, content: '21 degrees' });
      const answer = await client.chat({ model: 'qwen3-8b', messages, tools });
      assert.ok(answer.message.content.startsWith('tok0'));
      const sent = lastBody().messages;
      assert.equal(sent[1].tool_calls[0].function.arguments, '{"city":"New York City","unit":"celsius"}');
      assert.equal(sent[2].role, 'tool');
      assert.equal(sent[2].tool_call_id, sent[1].tool_calls[0].id);
      assert.deepEqual(lastBody().tools, tools);
    } finally {
      gpu.setKnobs({ toolCall: false, toolCallOnce: false });
    }
  });

  test('format: a JSON schema becomes response_format json_schema; "json" json_object', async () => {
    const schema = { type: 'object', properties: { age: { type: 'integer' } }, required: ['age'] };
    await client.chat({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'age?' }], format: schema });
    assert.deepEqual(lastBody().response_format, { type: 'json_schema', json_schema: { name: 'response', schema } });
    await client.generate({ model: 'qwen3-8b', prompt: 'json please', format: 'json' });
    assert.deepEqual(lastBody().response_format, { type: 'json_object' });
  });

  test('think: the reasoning switch is applied and message.thinking comes back', async () => {
    gpu.setKnobs({ reasoningChunks: 3, chunkCount: 2 });
    try {
      const whole = await client.chat({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'q' }], think: true });
      assert.ok(whole.message.thinking && whole.message.thinking.length > 0, JSON.stringify(whole.message));
      assert.ok(whole.message.content.startsWith('tok'));
      const stream = await client.chat({
        model: 'qwen3-8b',
        messages: [{ role: 'user', content: 'q' }],
        think: true,
        stream: true,
      });
      let thinking = '';
      for await (const part of stream) thinking += part.message.thinking ?? '';
      assert.ok(thinking.length > 0);
      const res = await fetch(`${gw.url}/api/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'q' }], think: false }),
      });
      await res.text();
      assert.equal(
        res.headers.get('x-reasoning-control'),
        'off:enable_thinking',
        'the switch, as this backend takes it',
      );
      assert.deepEqual(lastBody().chat_template_kwargs, { enable_thinking: false });
    } finally {
      gpu.setKnobs({ reasoningChunks: 0 });
    }
  });

  test('show, ps and version', async () => {
    const show = await client.show({ model: 'qwen3-8b' });
    assert.ok(show.capabilities.includes('completion'));
    assert.equal(typeof show.model_info, 'object');
    const ps = await client.ps();
    assert.ok(
      ps.models.some((m) => m.name === 'qwen3-8b'),
      'llama.cpp serves what it lists: loaded',
    );
    const { version } = await client.version();
    assert.match(version, /^\d+\.\d+\.\d+$/);
  });

  test('abort mid-stream, then a call that works; the lease is released', async () => {
    gpu.setKnobs({ chunkCount: 200, tokensPerSecond: 100 });
    try {
      const stream = await client.chat({
        model: 'qwen3-8b',
        messages: [{ role: 'user', content: 'long' }],
        stream: true,
      });
      let seen = 0;
      await assert.rejects(async () => {
        for await (const part of stream) {
          if (part.message.content && ++seen === 3) client.abort();
        }
      }, /abort/i);
      await waitFor(() => inflight() === 0, 'the aborted call released its slot');
      await waitFor(() => gpu.inflight === 0, 'the backend saw the hang-up');
    } finally {
      gpu.setKnobs({ chunkCount: 8, tokensPerSecond: 0 });
    }
    const res = await client.chat({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'again' }] });
    assert.ok(res.message.content.startsWith('tok0'));
    assert.equal(inflight(), 0);
  });
});
