import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { SseSplitter, type SseEvent } from '../src/wire/sse.ts';
import { createUsageTap, type UsageTap } from '../src/wire/stream-usage.ts';
import { readFixture } from './helpers/fixtures.ts';

const TRANSCRIPTS = [
  'llm/openai/chat_completions_stream_parallel_tool_calls_usage.sse.txt',
  'llm/openai/chat_completions_stream_tool_call_usage.sse.txt',
];

type Protocol = 'beforeDone first' | 'onEvent only';

/**
 * Plays a relay: splits `input` into `chunkSize`-byte chunks, passes every event through the
 * tap and collects the bytes it would write. The clock reads the index of the current event.
 */
function relay(
  input: string | Buffer,
  tap: (now: () => number) => UsageTap,
  protocol: Protocol = 'beforeDone first',
  chunkSize = 7,
) {
  const bytes = Buffer.isBuffer(input) ? input : Buffer.from(input);
  let eventIndex = -1;
  const usageTap = tap(() => eventIndex);
  const splitter = new SseSplitter();
  const out: Buffer[] = [];
  const handle = (ev: SseEvent) => {
    eventIndex += 1;
    if (protocol === 'beforeDone first' && ev.data === '[DONE]') {
      const usageEvent = usageTap.beforeDone();
      if (usageEvent) out.push(usageEvent);
    }
    const written = usageTap.onEvent(ev);
    if (written) out.push(written);
  };
  for (let at = 0; at < bytes.length; at += chunkSize)
    splitter.push(bytes.subarray(at, at + chunkSize)).forEach(handle);
  splitter.flush().forEach(handle);
  return { output: Buffer.concat(out).toString('utf8'), summary: usageTap.summary() };
}

function events(text: string): string[] {
  return text.split(/(?<=\n\n)/);
}

function isUsageOnly(block: string): boolean {
  return block.includes('"choices":[]') && block.includes('"usage":{');
}

function tapFor(clientWantsUsage: boolean, promptTokenEstimate = 11) {
  return (now: () => number) => createUsageTap({ clientWantsUsage, promptTokenEstimate, now });
}

/** Chunks whose delta carries a tool call name or non-empty arguments, read the slow way. */
function toolChunks(text: string): number[] {
  const indices: number[] = [];
  events(text).forEach((block, index) => {
    const data = block.slice('data: '.length).trim();
    if (data === '[DONE]') return;
    const calls = JSON.parse(data).choices[0]?.delta?.tool_calls ?? [];
    if (calls.some((c: any) => c.function?.name || c.function?.arguments)) indices.push(index);
  });
  return indices;
}

/** Parses an SSE body with the official SDK, as a client would (no network: a custom fetch). */
async function sdkChunks(body: string): Promise<any[]> {
  const client = new OpenAI({
    apiKey: 'test',
    baseURL: 'http://127.0.0.1:9/v1',
    maxRetries: 0,
    fetch: async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } }),
  });
  const stream = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks: any[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

test('client asked for usage: real transcripts pass through byte for byte', () => {
  for (const file of TRANSCRIPTS) {
    const input = readFixture(file);
    for (const protocol of ['beforeDone first', 'onEvent only'] as const) {
      const { output, summary } = relay(input, tapFor(true), protocol);
      assert.equal(output, input, `${file} (${protocol})`);
      assert.equal(summary.usageSource, 'reported');
      assert.equal(summary.usageSynthesised, false);
      assert.equal(summary.sawDone, true);
      assert.equal(summary.finishReason, 'tool_calls');
      assert.equal(summary.model, 'gpt-4o-2024-08-06');
      const tools = toolChunks(input);
      assert.equal(summary.contentChunks, tools.length, file);
      assert.equal(summary.firstTokenAt, tools[0], `first token time is the clock at the first content chunk: ${file}`);
    }
  }
  const parallel = relay(readFixture(TRANSCRIPTS[0]), tapFor(true)).summary;
  assert.deepEqual(parallel.usage, { prompt_tokens: 149, completion_tokens: 60, total_tokens: 209 });
  assert.equal(parallel.outputTokens, 60);
});

test('client did not ask for usage: only the usage-only chunk is removed', () => {
  for (const file of TRANSCRIPTS) {
    const input = readFixture(file);
    const usageBlocks = events(input).filter(isUsageOnly);
    assert.equal(usageBlocks.length, 1, `the transcript has one usage chunk: ${file}`);
    const { output, summary } = relay(input, tapFor(false), 'onEvent only', 1);
    assert.equal(output, input.replace(usageBlocks[0], ''), file);
    assert.ok(output.endsWith('data: [DONE]\n\n'));
    assert.equal(summary.usageSource, 'reported', 'the log still gets the reported usage');
    assert.equal(summary.usageSynthesised, false);
  }
});

test('client asked, backend sent no usage: a usage chunk is synthesised just before [DONE]', async () => {
  for (const file of TRANSCRIPTS) {
    const original = readFixture(file);
    const input = events(original)
      .filter((b) => !isUsageOnly(b))
      .join('');
    const contentChunks = toolChunks(input).length;
    for (const protocol of ['beforeDone first', 'onEvent only'] as const) {
      const { output, summary } = relay(input, tapFor(true, 40), protocol);
      const blocks = events(output);
      assert.equal(blocks.length, events(input).length + 1, `one event added: ${file}`);
      assert.equal(
        blocks.slice(0, -2).join(''),
        input.slice(0, input.lastIndexOf('data: [DONE]')),
        'the rest is untouched',
      );
      assert.equal(blocks.at(-1), 'data: [DONE]\n\n');
      const synthesised = JSON.parse(blocks.at(-2)!.slice('data: '.length));
      const first = JSON.parse(blocks[0].slice('data: '.length));
      assert.deepEqual(synthesised, {
        id: first.id,
        object: 'chat.completion.chunk',
        created: first.created,
        model: first.model,
        choices: [],
        usage: { prompt_tokens: 40, completion_tokens: contentChunks, total_tokens: 40 + contentChunks },
      });
      assert.equal(summary.usageSource, 'estimated');
      assert.equal(summary.usageSynthesised, true);
      assert.equal(summary.outputTokens, contentChunks);
    }
    const chunks = await sdkChunks(relay(input, tapFor(true, 40)).output);
    const last = chunks.at(-1);
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, {
      prompt_tokens: 40,
      completion_tokens: contentChunks,
      total_tokens: 40 + contentChunks,
    });
  }
});

/** A llama.cpp-style stream: no usage chunk, `timings` on the last chunk. */
function llamaCppStream(withTimings: boolean): string {
  const base =
    '"id":"chatcmpl-abc","created":1735142223,"model":"qwen","system_fingerprint":"b6510","object":"chat.completion.chunk"';
  const chunk = (choice: string, extra = '') => `data: {"choices":[${choice}],${base}${extra}}\n\n`;
  const timings = withTimings
    ? ',"timings":{"cache_n":13,"prompt_n":5,"prompt_ms":20.3,"predicted_n":42,"predicted_ms":300,"predicted_per_second":140}'
    : '';
  return (
    chunk('{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}') +
    chunk('{"finish_reason":null,"index":0,"delta":{"reasoning_content":"Hmm"}}') +
    chunk('{"finish_reason":null,"index":0,"delta":{"content":"Hel"}}') +
    ': keep-alive\n\n' +
    chunk('{"finish_reason":null,"index":0,"delta":{"content":"lo \\"quoted\\""}}') +
    chunk('{"finish_reason":"stop","index":0,"delta":{}}', timings) +
    'data: [DONE]\n\n'
  );
}

test('llama.cpp timings on the last chunk give the synthesised usage', async () => {
  const input = llamaCppStream(true);
  const { output, summary } = relay(input, tapFor(true, 999));
  const blocks = events(output);
  assert.equal(blocks.slice(0, -2).join(''), input.slice(0, input.lastIndexOf('data: [DONE]')));
  const synthesised = JSON.parse(blocks.at(-2)!.slice('data: '.length));
  assert.deepEqual(synthesised.usage, {
    prompt_tokens: 18,
    completion_tokens: 42,
    total_tokens: 60,
    prompt_tokens_details: { cached_tokens: 13 },
  });
  assert.equal(synthesised.id, 'chatcmpl-abc');
  assert.equal(synthesised.model, 'qwen');
  assert.equal(summary.usageSource, 'timings');
  assert.equal(summary.outputTokens, 42);
  assert.equal(summary.contentChunks, 3, 'reasoning and content chunks count; the role chunk does not');
  assert.equal(summary.firstTokenAt, 1, 'the reasoning chunk is the first token');
  assert.equal(summary.finishReason, 'stop');
  const chunks = await sdkChunks(output);
  assert.equal(chunks.at(-1).usage.total_tokens, 60);
});

test('client did not ask and backend sent no usage: bytes untouched, usage estimated for the log', () => {
  const input = llamaCppStream(false);
  const { output, summary } = relay(input, tapFor(false, 25), 'onEvent only', 3);
  assert.equal(output, input);
  assert.deepEqual(summary.usage, { prompt_tokens: 25, completion_tokens: 3, total_tokens: 28 });
  assert.equal(summary.usageSource, 'estimated');
  assert.equal(summary.usageSynthesised, false);
  assert.equal(summary.sawDone, true);
});

test('a usage field on a content chunk is left alone and counts as reported usage', () => {
  const usage = '"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}';
  const input =
    'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":null}\n\n' +
    `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"length"}],${usage}}\n\n` +
    'data: [DONE]\n\n';
  for (const wants of [false, true]) {
    const { output, summary } = relay(input, tapFor(wants));
    assert.equal(output, input, `clientWantsUsage ${wants}`);
    assert.deepEqual(summary.usage, { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 });
    assert.equal(summary.usageSynthesised, false);
    assert.equal(summary.finishReason, 'length');
  }
});

test('a stream cut before [DONE] synthesises nothing and says so', () => {
  const input = llamaCppStream(true).replace('data: [DONE]\n\n', '');
  const { output, summary } = relay(input, tapFor(true));
  assert.equal(output, input);
  assert.equal(summary.sawDone, false);
  assert.equal(summary.usageSynthesised, false);
  assert.equal(summary.usageSource, 'timings');
});

test('JSON is parsed only for the first chunk, the finish chunk and the usage chunk', (t) => {
  const input = readFixture(TRANSCRIPTS[0]);
  const realParse = JSON.parse;
  let parses = 0;
  JSON.parse = ((text: string, reviver?: any) => {
    parses += 1;
    return realParse(text, reviver);
  }) as typeof JSON.parse;
  t.after(() => {
    JSON.parse = realParse;
  });
  relay(input, tapFor(false));
  JSON.parse = realParse;
  assert.ok(events(input).length > 20);
  assert.equal(parses, 3);
});
