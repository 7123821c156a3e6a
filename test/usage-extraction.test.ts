import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usageFromAnthropic, usageFromOpenAI } from '../src/wire/usage.ts';
import { usageFromLlamaCppTimings } from '../src/wire/llama-timings.ts';
import { readFixture } from './helpers/fixtures.ts';

/** The JSON data payloads of an SSE transcript. */
function payloads(file: string): any[] {
  return readFixture(file)
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice('data: '.length)));
}

test('OpenAI chat usage chunk from a real transcript', () => {
  const chunks = payloads('llm/openai/chat_completions_stream_parallel_tool_calls_usage.sse.txt');
  assert.deepEqual(usageFromOpenAI(chunks.at(-1)), { prompt_tokens: 149, completion_tokens: 60, total_tokens: 209 });
  assert.equal(usageFromOpenAI(chunks[0]), undefined, 'a content chunk has no usage');
});

test('OpenAI Responses usage (input/output tokens) from a real transcript', () => {
  const completed = payloads('llm/openai/responses_stream_text.sse.txt').find((p) => p.type === 'response.completed');
  assert.deepEqual(usageFromOpenAI(completed.response), {
    prompt_tokens: 444,
    completion_tokens: 12,
    total_tokens: 456,
    cached_tokens: 0,
  });
});

test('OpenRouter usage: cached and cache-write tokens and cost', () => {
  // Shape of OpenRouter's documented usage object (Usage Accounting page).
  const chunk = {
    object: 'chat.completion.chunk',
    usage: {
      completion_tokens: 2,
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: 0.95,
      cost_details: { upstream_inference_cost: 19 },
      prompt_tokens: 194,
      prompt_tokens_details: { cached_tokens: 10, cache_write_tokens: 100, audio_tokens: 0 },
      total_tokens: 196,
    },
  };
  assert.deepEqual(usageFromOpenAI(chunk), {
    prompt_tokens: 194,
    completion_tokens: 2,
    total_tokens: 196,
    cached_tokens: 10,
    cache_write_tokens: 100,
    cost: 0.95,
  });
});

test('OpenAI usage: missing total is summed; null, missing or empty usage is undefined', () => {
  assert.deepEqual(usageFromOpenAI({ usage: { prompt_tokens: 3, completion_tokens: 4 } }), {
    prompt_tokens: 3,
    completion_tokens: 4,
    total_tokens: 7,
  });
  assert.equal(usageFromOpenAI({ usage: null }), undefined);
  assert.equal(usageFromOpenAI({ choices: [] }), undefined);
  assert.equal(usageFromOpenAI({ usage: {} }), undefined);
  assert.equal(usageFromOpenAI(null), undefined);
  assert.equal(usageFromOpenAI('usage'), undefined);
});

test('Anthropic usage from real message_start and message_delta events', () => {
  const events = payloads('llm/anthropic/messages_stream_tool_use.sse.txt');
  const start = events.find((e) => e.type === 'message_start');
  const delta = events.find((e) => e.type === 'message_delta');
  assert.deepEqual(usageFromAnthropic(start), {
    prompt_tokens: 849,
    completion_tokens: 10,
    total_tokens: 859,
    cached_tokens: 0,
    cache_write_tokens: 0,
  });
  assert.deepEqual(usageFromAnthropic(delta), {
    prompt_tokens: 849,
    completion_tokens: 47,
    total_tokens: 896,
    cached_tokens: 0,
    cache_write_tokens: 0,
  });
  assert.equal(usageFromAnthropic(events.find((e) => e.type === 'ping')), undefined);
});

test('Anthropic cache reads and writes are part of the prompt', () => {
  const body = {
    type: 'message',
    usage: { input_tokens: 5, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200, output_tokens: 30 },
  };
  assert.deepEqual(usageFromAnthropic(body), {
    prompt_tokens: 1205,
    completion_tokens: 30,
    total_tokens: 1235,
    cached_tokens: 1000,
    cache_write_tokens: 200,
  });
});

test('llama.cpp timings: prompt_n plus cache_n is the prompt, predicted_n the output', () => {
  assert.deepEqual(
    usageFromLlamaCppTimings({ cache_n: 13, prompt_n: 1, prompt_ms: 20.3, predicted_n: 326, predicted_ms: 3084 }),
    {
      prompt_tokens: 14,
      completion_tokens: 326,
      total_tokens: 340,
      cached_tokens: 13,
    },
  );
  assert.deepEqual(usageFromLlamaCppTimings({ prompt_n: 617, predicted_n: 1502 }), {
    prompt_tokens: 617,
    completion_tokens: 1502,
    total_tokens: 2119,
  });
  assert.equal(usageFromLlamaCppTimings({ prompt_ms: 3 }), undefined);
  assert.equal(usageFromLlamaCppTimings(undefined), undefined);
});
