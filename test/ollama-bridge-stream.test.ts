/**
 * Chat streams as Ollama NDJSON streams (src/bridges/ollama/stream.ts): a real OpenAI capture
 * with parallel tool calls played in random chunk sizes, text and thinking lines, the fast path
 * of text-only chunks, broken tool calls and in-stream errors; and the NDJSON framing
 * (wire/ndjson.ts) with the tap that reads an Ollama server's own stream.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChatToOllamaStream } from '../src/bridges/ollama/stream.ts';
import { OllamaNativeTap } from '../src/bridges/ollama/native-stream-tap.ts';
import { NdjsonSplitter } from '../src/wire/ndjson.ts';
import { readFixture } from './helpers/fixtures.ts';
import { play, feed } from './helpers/play-translator.ts';
import { prng } from './helpers/prng.ts';

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
