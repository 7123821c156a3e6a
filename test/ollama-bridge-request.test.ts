/**
 * The pure Ollama ⇄ chat bridge (src/bridges/ollama/), table-driven: Ollama requests into
 * chat-completions (and embeddings) bodies, chat answers back into Ollama's objects, statistics
 * in nanoseconds from given times, and the backend's errors in Ollama's words.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ollamaToChat, loadOnly } from '../src/bridges/ollama/request.ts';
import { ollamaToEmbeddings } from '../src/bridges/ollama/request-embed.ts';
import { chatToOllama, embedToOllama } from '../src/bridges/ollama/response.ts';
import { ollamaMetrics } from '../src/bridges/ollama/metrics.ts';
import { ollamaErrorFromUpstream } from '../src/bridges/ollama/errors.ts';

const chatOf = (body: Record<string, unknown>, kind: 'chat' | 'generate' = 'chat', stream = false) => {
  const made = ollamaToChat(kind, body, { model: 'm', stream });
  assert.ok(made.ok, JSON.stringify(made));
  return made;
};
const problemOf = (body: Record<string, unknown>, kind: 'chat' | 'generate' = 'chat') => {
  const made = ollamaToChat(kind, body, { model: 'm', stream: false });
  assert.ok(!made.ok);
  return made.error;
};

describe('Ollama requests as chat-completions requests', () => {
  test('options map to sampling fields; load-time options and keep_alive stay out', () => {
    const { chat } = chatOf({
      messages: [{ role: 'user', content: 'hi' }],
      options: { temperature: 0, top_p: 0.5, top_k: 3, min_p: 0.1, num_predict: 9, stop: 'X', seed: 1, num_ctx: 8192 },
      keep_alive: -1,
    });
    assert.deepEqual(chat, {
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0,
      top_p: 0.5,
      top_k: 3,
      min_p: 0.1,
      seed: 1,
      max_tokens: 9,
      stop: ['X'],
    });
    for (const predict of [-1, -2, 0])
      assert.equal(chatOf({ options: { num_predict: predict } }).chat.max_tokens, undefined);
  });

  test('streams ask for usage; format and think', () => {
    assert.deepEqual(chatOf({}, 'chat', true).chat.stream_options, { include_usage: true });
    assert.deepEqual(chatOf({ format: 'json' }).chat.response_format, { type: 'json_object' });
    const schema = { type: 'object' };
    assert.deepEqual(chatOf({ format: schema }).chat.response_format, {
      type: 'json_schema',
      json_schema: { name: 'response', schema },
    });
    assert.deepEqual(chatOf({ think: true }).want, { value: 'on' });
    assert.deepEqual(chatOf({ think: false }).want, { value: 'off' });
    assert.deepEqual(chatOf({ think: 'max' }).want, { value: 'on', effort: 'high' });
    assert.equal(chatOf({}).want, undefined);
  });

  test('images become image parts with the type their bytes say', () => {
    const { chat } = chatOf({ messages: [{ role: 'user', content: '', images: ['/9j/4AAQ', 'R0lGODlh'] }] });
    assert.deepEqual((chat.messages as any[])[0].content, [
      { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } },
      { type: 'image_url', image_url: { url: 'data:image/gif;base64,R0lGODlh' } },
    ]);
  });

  test('tool calls: object arguments as text, ids made up, results matched by id, name, then order', () => {
    const { chat } = chatOf({
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: '',
          thinking: 'hidden',
          tool_calls: [
            { function: { name: 'a', arguments: { x: 1 } } },
            { id: 'given', function: { name: 'b', arguments: {} } },
            { function: { name: 'c', arguments: { y: [2] } } },
          ],
        },
        { role: 'tool', tool_name: 'b', content: 'B' },
        { role: 'tool', content: 'first open' },
        { role: 'tool', tool_call_id: 'call_1_2', content: 'C' },
      ],
      tools: [{ type: 'function', function: { name: 'a' } }],
    });
    const messages = chat.messages as any[];
    assert.deepEqual(
      messages[1].tool_calls.map((c: any) => [c.id, c.function.name, c.function.arguments]),
      [
        ['call_1_0', 'a', '{"x":1}'],
        ['given', 'b', '{}'],
        ['call_1_2', 'c', '{"y":[2]}'],
      ],
    );
    assert.equal(messages[1].thinking, undefined);
    assert.deepEqual(
      messages.slice(2).map((m) => [m.role, m.tool_call_id, m.content]),
      [
        ['tool', 'given', 'B'],
        ['tool', 'call_1_0', 'first open'],
        ['tool', 'call_1_2', 'C'],
      ],
    );
    assert.deepEqual(chat.tools, [{ type: 'function', function: { name: 'a' } }]);
  });

  test('generate: system and prompt; suffix is for Ollama servers only', () => {
    const { chat } = chatOf({ system: 'S', prompt: 'P', raw: true, template: 'T', context: [1, 2] }, 'generate');
    assert.deepEqual(chat.messages, [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'P' },
    ]);
    assert.equal(problemOf({ prompt: 'def f(', suffix: 'return x' }, 'generate').param, 'suffix');
  });

  test('mistakes name their field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ messages: 'hi' }, 'messages'],
      [{ messages: [{ role: 'robot', content: 'x' }] }, 'messages.0.role'],
      [{ messages: [{ role: 'user', content: 3 }] }, 'messages.0.content'],
      [{ messages: [{ role: 'user', content: 'x', images: [1] }] }, 'messages.0.images.0'],
      [{ options: { temperature: 'hot' } }, 'options.temperature'],
      [{ format: 'yaml' }, 'format'],
      [{ think: 'very' }, 'think'],
      [{ tools: {} }, 'tools'],
    ];
    for (const [body, param] of cases) assert.equal(problemOf(body).param, param, JSON.stringify(body));
  });

  test('embed and embeddings; what only loads a model', () => {
    assert.deepEqual(ollamaToEmbeddings('embed', { input: ['a'], dimensions: 4 }, 'm'), {
      ok: true,
      body: { model: 'm', input: ['a'], dimensions: 4 },
    });
    assert.deepEqual(ollamaToEmbeddings('embeddings', { prompt: 'p' }, 'm'), {
      ok: true,
      body: { model: 'm', input: 'p' },
    });
    const bad = ollamaToEmbeddings('embed', { input: [1] }, 'm');
    assert.ok(!bad.ok && bad.error.message === 'invalid input type');
    assert.equal(loadOnly('generate', { model: 'm' }), 'load');
    assert.equal(loadOnly('generate', { model: 'm', prompt: '', keep_alive: 0 }), 'unload');
    assert.equal(loadOnly('chat', { model: 'm', messages: [] }), 'load');
    assert.equal(loadOnly('chat', { model: 'm', messages: [{ role: 'user', content: 'x' }] }), undefined);
  });
});

describe('chat answers as Ollama objects', () => {
  const times = { startedAt: 1000, sentAt: 1250, endedAt: 2000 };
  const usage = { prompt_tokens: 10, completion_tokens: 30, total_tokens: 40 };

  test('statistics in nanoseconds from the times the gateway saw', () => {
    assert.deepEqual(ollamaMetrics({ ...times, firstTokenAt: 1500 }, usage), {
      total_duration: 1_000_000_000,
      load_duration: 250_000_000,
      prompt_eval_count: 10,
      prompt_eval_duration: 250_000_000,
      eval_count: 30,
      eval_duration: 500_000_000,
    });
    const split = ollamaMetrics(times, usage, { promptMs: 100, predictedMs: 400 });
    assert.deepEqual([split.prompt_eval_duration, split.eval_duration], [150_000_000, 600_000_000]);
    assert.equal(ollamaMetrics(times, usage).eval_duration, 750_000_000, 'no first token: the attempt is eval');
  });

  test('message with thinking and tool calls; generate in `response`; done_reason', () => {
    const completion = {
      choices: [
        {
          finish_reason: 'length',
          message: {
            content: 'hi',
            reasoning_content: 'hmm',
            tool_calls: [{ id: 'c1', function: { name: 'f', arguments: '{"a":1}' } }],
          },
        },
      ],
    };
    const ctx = { model: 'asked', createdAt: 'T', metrics: ollamaMetrics(times, usage) };
    const made = (kind: 'chat' | 'generate', c: Record<string, unknown> = completion) => {
      const answer = chatToOllama(kind, c, ctx);
      assert.ok(answer.ok);
      return answer.answer;
    };
    const chat = made('chat');
    assert.deepEqual(chat.message, {
      role: 'assistant',
      content: 'hi',
      thinking: 'hmm',
      tool_calls: [{ id: 'c1', function: { index: 0, name: 'f', arguments: { a: 1 } } }],
    });
    assert.deepEqual([chat.model, chat.done, chat.done_reason, chat.eval_count], ['asked', true, 'length', 30]);
    const gen = made('generate');
    assert.deepEqual([gen.response, gen.thinking, gen.message], ['hi', 'hmm', undefined]);
    const emb = embedToOllama(
      {
        data: [
          { index: 1, embedding: [2] },
          { index: 0, embedding: [1] },
        ],
      },
      ctx,
    );
    assert.deepEqual(emb.embeddings, [[1], [2]]);
  });

  test('a tool call whose arguments are not a JSON object is an error, never a string in their place', () => {
    const ctx = { model: 'asked', createdAt: 'T', metrics: ollamaMetrics(times, usage) };
    for (const args of ['{"city": "Par', '[1, 2]', 'not json']) {
      const completion = { choices: [{ message: { tool_calls: [{ function: { name: 'f', arguments: args } }] } }] };
      const answer = chatToOllama('chat', completion, ctx);
      assert.ok(!answer.ok && /"f"/.test(answer.message), args);
    }
  });

  test('a backend error in Ollama words', () => {
    assert.deepEqual(ollamaErrorFromUpstream(400, '{"error":{"message":"too long","type":"x"}}'), {
      error: 'too long',
    });
    assert.deepEqual(ollamaErrorFromUpstream(502, 'bad gateway'), { error: 'bad gateway' });
    assert.deepEqual(ollamaErrorFromUpstream(500, ''), { error: 'the backend answered HTTP 500' });
  });
});
