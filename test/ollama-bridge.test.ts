/**
 * The pure Ollama ⇄ chat bridge (src/bridges/ollama/) and the NDJSON splitter, table-driven:
 * requests into chat-completions bodies, answers and streams back into Ollama's objects (a real
 * OpenAI stream capture with parallel tool calls played in random chunk sizes), statistics in
 * nanoseconds from a fake clock, and the tap that reads an Ollama server's own stream.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ollamaToChat, loadOnly } from '../src/bridges/ollama/request.ts';
import { ollamaToEmbeddings } from '../src/bridges/ollama/request-embed.ts';
import { chatToOllama, embedToOllama } from '../src/bridges/ollama/response.ts';
import { ollamaMetrics } from '../src/bridges/ollama/metrics.ts';
import { ChatToOllamaStream } from '../src/bridges/ollama/stream.ts';
import { OllamaNativeTap } from '../src/bridges/ollama/native-stream-tap.ts';
import { ollamaErrorFromUpstream } from '../src/bridges/ollama/errors.ts';
import { NdjsonSplitter } from '../src/wire/ndjson.ts';
import { readFixture } from './helpers/fixtures.ts';
import { play, feed } from './helpers/play-translator.ts';
import { prng } from './helpers/prng.ts';

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

describe('a chat stream as an Ollama NDJSON stream', () => {
  const capture = readFixture('llm/openai/chat_completions_stream_parallel_tool_calls_usage.sse.txt');
  const make = (kind: 'chat' | 'generate') => (clock: () => number) =>
    new ChatToOllamaStream({ kind, model: 'asked', now: clock, promptTokenEstimate: 1, startedAt: -3, sentAt: -2 });

  /** The capture's calls, reassembled by index: what the Ollama line must carry. */
  const expectedCalls = () => {
    const calls: { name: string; args: string }[] = [];
    for (const line of capture.split('\n')) {
      if (!line.startsWith('data: {')) continue;
      for (const c of JSON.parse(line.slice(6)).choices[0]?.delta?.tool_calls ?? []) {
        calls[c.index] ??= { name: '', args: '' };
        if (c.function?.name) calls[c.index]!.name = c.function.name;
        calls[c.index]!.args += c.function?.arguments ?? '';
      }
    }
    return calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.args) }));
  };

  test('parallel tool calls: one line with every call whole, then done with the usage', () => {
    const random = prng(7);
    for (let round = 0; round < 20; round++) {
      const { output, t } = play(capture, () => 1 + Math.floor(random() * 40), make('chat'));
      assert.ok(t.ended);
      assert.ok(output.endsWith('\n'));
      const lines = output
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      assert.equal(lines.length, 2, output);
      const calls = lines[0].message.tool_calls;
      assert.deepEqual(
        calls.map((c: any) => ({ name: c.function.name, arguments: c.function.arguments })),
        expectedCalls(),
      );
      assert.deepEqual(
        calls.map((c: any) => c.function.index),
        calls.map((_: unknown, i: number) => i),
      );
      const last = lines[1];
      assert.deepEqual([last.done, last.done_reason, last.prompt_eval_count, last.eval_count], [true, 'stop', 149, 60]);
      assert.equal(last.model, 'asked');
      // the clock reads the event's index; the call arrived at -3 and was sent at -2 (milliseconds)
      const first = t.summary().firstTokenAt!;
      assert.equal(last.load_duration, 1_000_000);
      assert.equal(last.prompt_eval_duration, (first + 2) * 1_000_000);
    }
  });

  test('text and thinking: one line per fragment, in order; generate writes `response`', () => {
    const USAGE = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const events = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ reasoning_content: 'think' }),
      chunk({ content: 'Hel' }),
      chunk({ content: 'lo "you"' }),
      chunk({}, 'stop'),
      `data: ${JSON.stringify({ choices: [], usage: USAGE })}\n\n`,
      'data: [DONE]\n\n',
    ];
    const chat = feed(
      make('chat')(() => 7),
      events,
    )
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      chat.map((l) => [l.message.content, l.message.thinking, l.done]),
      [
        ['', 'think', false],
        ['Hel', undefined, false],
        ['lo "you"', undefined, false],
        ['', undefined, true],
      ],
    );
    // a constant clock: the whole call took 10 ms, all of it before the (instant) first token
    assert.deepEqual(
      [chat[3].total_duration, chat[3].load_duration, chat[3].eval_duration],
      [10_000_000, 1_000_000, 0],
    );
    const gen = feed(
      make('generate')(() => 7),
      events,
    )
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      gen.map((l) => l.response),
      ['', 'Hel', 'lo "you"', ''],
    );
    assert.equal(gen[0].thinking, 'think');
  });

  test('text-only chunks take the fast path: their literal copied as it stands, the text intact', () => {
    const texts = ['first', 'say "content":"x"', 'tab\tand \\ back', ' usage of "usage"', 'é ☃ \u2028', ''];
    const chunk = (delta: object, extra: object = {}) =>
      `data: ${JSON.stringify({ ...extra, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
    const events = [
      chunk({ role: 'assistant', content: '' }, { id: 'c', model: 'backend-model' }),
      ...texts.map((content) => chunk({ content })),
      'data: {"choices": [{"index": 0, "delta": {"content": "spaced"}, "finish_reason": null}]}\n\n',
      'data: [DONE]\n\n',
    ];
    const t = make('chat')(() => 1);
    const lines = feed(t, events)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.slice(0, -1).map((l) => l.message.content),
      [...texts.filter(Boolean), 'spaced'],
    );
    const summary = t.summary();
    assert.deepEqual([summary.contentChunks, summary.model], [6, 'backend-model']);
    assert.equal(lines.at(-1).eval_count, 6, 'estimated from the chunks counted on both paths');
  });

  test('a streamed tool call cut off mid-arguments ends the stream with an {"error"} line', () => {
    const call = (args: string, name?: string) => {
      const delta = { tool_calls: [{ index: 0, function: { name, arguments: args } }] };
      return `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
    };
    const t = make('chat')(() => 0);
    const out = feed(t, [
      call('{"ci', 'get_weather'),
      call('ty": "Pa'),
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'length' }] })}\n\n`,
      'data: [DONE]\n\n',
    ]);
    const lines = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.equal(lines.length, 1, out);
    assert.match(lines[0].error, /get_weather/);
    assert.deepEqual(t.inBandError(), { detail: lines[0].error, delivered: true });
  });

  test('an in-stream error writes nothing and says so; a stream without [DONE] is closed by end()', () => {
    const t = make('chat')(() => 0);
    const out = feed(t, ['data: {"error":{"message":"boom","code":500}}\n\n']);
    assert.equal(out, '');
    assert.equal(t.inBandError()?.delivered, false);
    assert.equal(t.upstreamError, 'boom');
    const cut = make('chat')(() => 0);
    feed(cut, [`data: ${JSON.stringify({ choices: [{ delta: { content: 'x' }, finish_reason: 'length' }] })}\n\n`]);
    assert.ok(cut.finishedWithoutMarker());
    const last = JSON.parse(cut.end()!.toString());
    assert.deepEqual([last.done, last.done_reason], [true, 'length']);
  });
});

describe('NDJSON framing', () => {
  test('lines across chunk boundaries, bytes kept, CRLF and a cut-off last line', () => {
    const input = '{"a":1}\n{"b":"x\\ny"}\r\n\n{"c":3}';
    const random = prng(3);
    for (let round = 0; round < 30; round++) {
      const splitter = new NdjsonSplitter();
      const events = [];
      for (let at = 0; at < input.length;) {
        const size = 1 + Math.floor(random() * 6);
        events.push(...splitter.push(Buffer.from(input.slice(at, at + size))));
        at += size;
      }
      events.push(...splitter.flush());
      assert.equal(Buffer.concat(events.map((e) => e.raw)).toString(), input);
      assert.deepEqual(
        events.map((e) => e.data),
        ['{"a":1}', '{"b":"x\\ny"}', '', '{"c":3}'],
      );
      assert.deepEqual(
        events.map((e) => e.incomplete === true),
        [false, false, false, true],
      );
    }
  });

  test("an Ollama server's stream passes through as it came; its counts are read off the last line", () => {
    const lines = [
      '{"model":"m","created_at":"t","message":{"role":"assistant","content":"a"},"done":false}\n',
      '{"model":"m","created_at":"t","message":{"role":"assistant","content":"b"},"done":false}\n',
      '{"model":"m","created_at":"t","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",' +
        '"prompt_eval_count":12,"eval_count":2}\n',
    ];
    const tap = new OllamaNativeTap(() => 5, 1);
    const out = new NdjsonSplitter().push(Buffer.from(lines.join(''))).map((e) => tap.onEvent(e)!.toString());
    assert.deepEqual(out, lines);
    assert.ok(tap.ended);
    const s = tap.summary();
    assert.deepEqual(
      [s.usage.prompt_tokens, s.usage.completion_tokens, s.usageSource, s.firstTokenAt],
      [12, 2, 'reported', 5],
    );
    const failed = new OllamaNativeTap(() => 0, 1);
    failed.onEvent(new NdjsonSplitter().push(Buffer.from('{"error":"out of memory"}\n'))[0]!);
    assert.deepEqual(failed.inBandError(), { detail: 'out of memory', delivered: true });
  });
});
