/**
 * The Vercel AI SDK (the main Responses client: its default OpenAI model calls /v1/responses)
 * through the bridge, offline: its fetch hands each request to `responsesToChat`, a canned chat
 * backend answers, and the answer goes back through `chatToResponse` or `ChatToResponsesStream`.
 * A two-step tool loop shows what the SDK really sends on the second step (its own
 * `function_call` and `function_call_output` items, and an `item_reference` to the text it got).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { newResponseId } from '../src/bridges/responses/ids.ts';
import { responsesToChat } from '../src/bridges/responses/request.ts';
import { chatToResponse } from '../src/bridges/responses/response.ts';
import { ChatToResponsesStream } from '../src/bridges/responses/stream.ts';
import { SseSplitter } from '../src/wire/sse.ts';

type Json = Record<string, any>;

/** What the canned backend says at each step: a text and a call first, then the answer. */
const STEP_ANSWERS: Json[] = [
  {
    content: 'Let me check.',
    tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
    finish: 'tool_calls',
  },
  { content: 'It is 3°C in Oslo.', finish: 'stop' },
];

function chatAnswer(step: Json): Json {
  const { finish, ...message } = step;
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'backend',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
    usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 },
  };
}

function chatStream(step: Json): string {
  const chunk = (choice: Json | undefined, extra: Json = {}) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', model: 'backend', choices: choice ? [{ index: 0, ...choice }] : [], ...extra })}\n\n`;
  let body = chunk({ delta: { role: 'assistant', content: step.content }, finish_reason: null });
  for (const [index, call] of (step.tool_calls ?? []).entries()) {
    body += chunk({
      delta: {
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
      },
      finish_reason: null,
    });
    body += chunk({
      delta: { tool_calls: [{ index, function: { arguments: call.function.arguments } }] },
      finish_reason: null,
    });
  }
  return (
    body +
    chunk({ delta: {}, finish_reason: step.finish }) +
    chunk(undefined, { usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 } }) +
    'data: [DONE]\n\n'
  );
}

/** A gateway in miniature: every request translated, every answer translated back, every output item kept for references. */
function bridgedFetch() {
  const requests: Json[] = [];
  const chats: Json[] = [];
  const items = new Map<string, unknown>();
  const fetch = async (_url: unknown, init?: { body?: unknown }): Promise<Response> => {
    const body = JSON.parse(String(init?.body));
    requests.push(body);
    const translated = responsesToChat(body, {
      model: 'backend',
      stream: body.stream === true,
      resolveItem: (id) => items.get(id),
    });
    if (!translated.ok)
      return new Response(
        JSON.stringify({
          error: { message: translated.error.message, param: translated.error.param, type: 'invalid_request_error' },
        }),
        { status: translated.error.status },
      );
    chats.push(translated.chat);
    const step = STEP_ANSWERS[chats.length - 1];
    const opts = { id: newResponseId(), createdAt: 1727346182, model: body.model, request: body };
    let response: Json;
    let answer: Response;
    if (body.stream === true) {
      const t = new ChatToResponsesStream({ ...opts, now: () => 0, promptTokenEstimate: 10 });
      const splitter = new SseSplitter();
      let out = '';
      for (const ev of [...splitter.push(Buffer.from(chatStream(step))), ...splitter.flush()])
        out += t.onEvent(ev)?.toString() ?? '';
      response = t.finalResponse();
      answer = new Response(out, { headers: { 'content-type': 'text/event-stream' } });
    } else {
      const made = chatToResponse(chatAnswer(step), opts);
      assert.ok(made.ok);
      response = made.response;
      answer = new Response(JSON.stringify(response), { headers: { 'content-type': 'application/json' } });
    }
    for (const item of response.output) items.set(item.id, item);
    return answer;
  };
  return { fetch, requests, chats };
}

const weather = tool({
  description: 'Weather in a city',
  inputSchema: jsonSchema<{ city: string }>({
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
  }),
  execute: async ({ city }) => ({ city, celsius: 3 }),
});

for (const streamed of [false, true]) {
  test(`AI SDK: a two-step tool loop through the bridge (${streamed ? 'streamText' : 'generateText'})`, async () => {
    const gateway = bridgedFetch();
    const provider = createOpenAI({
      apiKey: 'test',
      baseURL: 'http://127.0.0.1:9/v1',
      fetch: gateway.fetch as typeof fetch,
    });
    const args = {
      model: provider('qwen3'),
      system: 'Be brief.',
      prompt: 'Weather in Oslo?',
      tools: { weather },
      stopWhen: stepCountIs(3),
    };
    let text: string;
    let steps: number;
    if (streamed) {
      const result = streamText(args);
      text = await result.text;
      steps = (await result.steps).length;
    } else {
      const result = await generateText(args);
      text = result.text;
      steps = result.steps.length;
    }
    assert.equal(steps, 2);
    assert.match(text, /3°C in Oslo/);

    // the second request, as the SDK sent it and as the backend got it
    const second = gateway.requests[1];
    assert.deepEqual(
      second.input.map((i: Json) => i.type ?? i.role),
      ['system', 'user', 'item_reference', 'function_call', 'function_call_output'],
    );
    assert.deepEqual([second.tools[0].type, second.tools[0].name], ['function', 'weather'], 'the flat Responses shape');
    assert.deepEqual(gateway.chats[1].messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_w1', content: '{"city":"Oslo","celsius":3}' },
    ]);
    assert.deepEqual(
      gateway.chats[1].tools.map((t: Json) => t.function.name),
      ['weather'],
    );
  });
}

test("AI SDK: without a store behind the bridge, the reference to the first answer's text is a 400 that says what to do", async () => {
  const gateway = bridgedFetch();
  const stateless = async (url: unknown, init?: { body?: unknown }) => {
    const body = JSON.parse(String(init?.body));
    const translated = responsesToChat(body, { model: 'backend', stream: false });
    if (!translated.ok)
      return new Response(
        JSON.stringify({
          error: { message: translated.error.message, param: translated.error.param, type: 'invalid_request_error' },
        }),
        { status: 400 },
      );
    return gateway.fetch(url, init);
  };
  const provider = createOpenAI({ apiKey: 'test', baseURL: 'http://127.0.0.1:9/v1', fetch: stateless as typeof fetch });
  await assert.rejects(
    generateText({
      model: provider('qwen3'),
      prompt: 'Weather in Oslo?',
      tools: { weather },
      stopWhen: stepCountIs(3),
    }),
    (err: Error) =>
      /item_reference|no stored item "msg_[0-9a-f]{48}"/.test(err.message) && /store = false/.test(err.message),
  );
  const provider2 = createOpenAI({
    apiKey: 'test',
    baseURL: 'http://127.0.0.1:9/v1',
    fetch: stateless as typeof fetch,
  });
  const ok = await generateText({
    model: provider2('qwen3'),
    prompt: 'Weather in Oslo?',
    tools: { weather },
    stopWhen: stepCountIs(3),
    providerOptions: { openai: { store: false } },
  });
  assert.match(ok.text, /3°C/, 'with store: false the SDK sends the items themselves');
});
