/**
 * The Responses API end to end with the official `openai` SDK and the Vercel AI SDK (whose
 * default model calls /v1/responses), translated for a llama.cpp backend, and passed through
 * untouched to a `responses: native` one (a replay of a real OpenAI capture).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { request } from 'undici';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startReplay, type ReplayBackend } from './fakes/replay.ts';
import { fixturePath } from './helpers/fixtures.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { weatherToolLoop } from './helpers/ai-sdk-tools.ts';

const MASTER = 'gw-master-responses';
const weather = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

describe('the Responses API through the gateway', () => {
  let local: FakeBackend;
  let native: ReplayBackend | undefined;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    local = await startFake('llamacpp', { models: ['qwen3-8b'], knobs: { chunkCount: 6 } });
    const backends = [{ name: 'local', url: local.url }];
    native = await startReplay('gpt-5.2', readFileSync(fixturePath('llm/openai/responses_stream_text.sse.txt')), {
      chunkBytes: 97,
    });
    backends.push({ name: 'native', url: native.url, responses: 'native' } as (typeof backends)[number]);
    gw = await startGateway(backends, {
      api_key: MASTER,
      virtual_models: { r: { local: 'qwen3-8b' }, n: { native: 'gpt-5.2' } },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0, timeout: 10_000 });
  });
  after(async () => {
    await gw?.close();
    await local?.close();
    await native?.close();
  });

  test('responses.create: one message, usage renamed, the model the client asked for', async () => {
    const res = await client.responses.create({ model: 'r', input: 'hello there', instructions: 'Be brief.' });
    assert.match(res.id, /^resp_/);
    assert.equal(res.status, 'completed');
    assert.equal(res.model, 'r');
    assert.equal(res.output_text, 'tok0 tok1 tok2 tok3 tok4 tok5');
    assert.ok(res.usage && res.usage.input_tokens > 0 && res.usage.output_tokens === 6);
    const sent = local.requests.at(-1)!.body;
    assert.deepEqual(
      sent.messages.map((m: { role: string }) => m.role),
      ['system', 'user'],
    );
  });

  test('responses.stream() + finalResponse()', async () => {
    const stream = client.responses.stream({
      model: 'r',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'count' }] }],
    });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    assert.equal(final.status, 'completed');
    assert.equal(deltas.join(''), final.output_text);
    assert.equal(deltas.length, 6);
  });

  test('a function-call round trip with function_call_output', async () => {
    local.setKnobs({
      toolCall: true,
      toolCallOnce: true,
      toolCallName: 'get_weather',
      toolCallArguments: '{"city":"Oslo"}',
    });
    try {
      const first = await client.responses.create({ model: 'r', input: 'weather in Oslo?', tools: [weather] });
      const call = first.output.find((o) => o.type === 'function_call');
      assert.ok(call && call.type === 'function_call');
      assert.equal(call.name, 'get_weather');
      assert.equal(call.arguments, '{"city":"Oslo"}');
      const second = await client.responses.create({
        model: 'r',
        tools: [weather],
        input: [
          { role: 'user', content: 'weather in Oslo?' },
          { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
          { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 18 °C' },
        ],
      });
      assert.equal(second.status, 'completed');
      assert.ok(second.output_text.length > 0);
      const sent = local.requests.at(-1)!.body;
      const tool = sent.messages.find((m: { role: string }) => m.role === 'tool');
      assert.equal(tool.content, 'sunny, 18 °C');
      assert.equal(tool.tool_call_id, call.call_id);
    } finally {
      local.setKnobs({ toolCall: false, toolCallOnce: false });
    }
  });

  test('store: true and previous_response_id carry a conversation; an unknown id is a 400 naming it', async () => {
    const first = await client.responses.create({ model: 'r', input: 'my name is Ada', store: true });
    await client.responses.create({ model: 'r', input: 'what is my name?', previous_response_id: first.id });
    const sent = local.requests.at(-1)!.body;
    const texts = sent.messages.map((m: { content: unknown }) =>
      typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
    );
    assert.ok(
      texts.some((t: string) => t.includes('my name is Ada')),
      texts.join(' | '),
    );
    assert.ok(
      texts.some((t: string) => t.includes(first.output_text)),
      'the earlier answer too',
    );
    await assert.rejects(
      client.responses.create({ model: 'r', input: 'x', previous_response_id: 'resp_nope' }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === 'previous_response_id',
    );
    const unstored = await client.responses.create({ model: 'r', input: 'forget me', store: false });
    await assert.rejects(client.responses.retrieve(unstored.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });

  test('built-in tools the gateway cannot run are a 400 naming the tool', async () => {
    await assert.rejects(
      client.responses.create({ model: 'r', input: 'search', tools: [{ type: 'web_search_preview' }] }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /web_search/.test(err.message),
    );
    assert.equal(
      local.requests.filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body).includes('"search"'))
        .length,
      0,
    );
  });

  test('background: queued at once, then completed; ?stream=true replays the events', async () => {
    const loggedBefore = gw.gateway.callLog.recent({ backend: 'local' }).length;
    const queued = await client.responses.create({ model: 'r', input: 'in the background', background: true });
    assert.equal(queued.status, 'queued');
    let done = queued;
    await waitFor(async () => (done = await client.responses.retrieve(queued.id)).status === 'completed', 'completed');
    assert.equal(done.output_text, 'tok0 tok1 tok2 tok3 tok4 tok5');
    assert.equal(done.background, true);
    const replay = await request(`${gw.url}/v1/responses/${queued.id}?stream=true`, {
      headers: { authorization: `Bearer ${MASTER}` },
    });
    const text = await replay.body.text();
    const types = [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    await waitFor(
      () => gw.gateway.callLog.recent({ backend: 'local' }).length === loggedBefore + 1,
      'exactly one row for the background run',
    );
    assert.equal(gw.gateway.callLog.recent({ backend: 'local' })[0].endpoint, '/v1/responses');
  });

  test('owner gating: another key gets 404, an admin sees it', async () => {
    const a = gw.gateway.users.create({ name: 'alice' }).key;
    const b = gw.gateway.users.create({ name: 'bob' }).key;
    const asA = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: a, maxRetries: 0 });
    const asB = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: b, maxRetries: 0 });
    const mine = await asA.responses.create({ model: 'r', input: 'private', background: true });
    await assert.rejects(asB.responses.retrieve(mine.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(asB.responses.cancel(mine.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    assert.equal((await client.responses.retrieve(mine.id)).id, mine.id);
    assert.equal((await asA.responses.retrieve(mine.id)).id, mine.id);
  });

  test('the licence boundary holds here too', async () => {
    await assert.rejects(
      client.responses.create({ model: 'no-such', input: 'x' }),
      (err: unknown) => err instanceof OpenAI.NotFoundError,
    );
  });

  test('a native backend: the client gets its stream byte for byte; usage on record', async () => {
    const res = await request(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model: 'n', input: 'hi', stream: true }),
    });
    const text = await res.body.text();
    assert.equal(text, readFileSync(fixturePath('llm/openai/responses_stream_text.sse.txt'), 'utf8'));
    assert.equal(native!.requests.at(-1).model, 'gpt-5.2');
    await waitFor(() => gw.gateway.callLog.recent({ backend: 'native' }).length === 1, 'logged');
    const [row] = gw.gateway.callLog.recent({ backend: 'native' });
    assert.ok(row.prompt_tokens > 0 && row.completion_tokens > 0, 'usage from response.completed');
    assert.equal(row.status, 200);
  });

  describe('the Vercel AI SDK (default model = Responses)', () => {
    const ai = () => createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER });

    test('generateText and streamText', async () => {
      const { text } = await generateText({ model: ai()('r'), prompt: 'hello' });
      assert.equal(text, 'tok0 tok1 tok2 tok3 tok4 tok5');
      const streamed = streamText({ model: ai()('r'), prompt: 'hello again' });
      let collected = '';
      for await (const part of streamed.textStream) collected += part;
      assert.equal(collected, 'tok0 tok1 tok2 tok3 tok4 tok5');
      await waitFor(
        () => gw.gateway.callLog.recent({ backend: 'local' })[0]?.endpoint === '/v1/responses',
        'the SDK called /v1/responses',
      );
    });

    test('tools over two steps', async () => {
      const { ran, result, toolMessage } = await weatherToolLoop(ai()('r'), local);
      assert.equal(ran, 'Oslo');
      assert.equal(result.steps.length, 2);
      assert.ok(result.text.length > 0);
      assert.match(String(toolMessage?.content), /sunny in Oslo/);
    });
  });
});
