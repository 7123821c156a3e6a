/**
 * The OpenAI-compatible fakes' reasoning and tool knobs: reasoningChunks in each server's own
 * field, toolCallName / toolCallArguments, parallelToolCalls, and toolCallOnce ending a tool loop.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { FAKE_KINDS, startFleet, type FakeKind } from './fakes/index.ts';
import { CHAT, chatBody, chunksOf, contentOf, post, streamBody, withFake } from './fakes/http-helpers.ts';

/** Where each real server puts reasoning text. */
const REASONING_FIELD: Record<FakeKind, string> = {
  llamacpp: 'reasoning_content',
  llamaswap: 'reasoning_content',
  vllm: 'reasoning_content',
  ollama: 'reasoning',
  openrouter: 'reasoning',
  together: 'reasoning',
};

const TOOL = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } };

describe('reasoningChunks', () => {
  test("non-stream: choices[0].message carries the reasoning in the kind's field; it counts as completion tokens", async () => {
    const fleet = await startFleet([...FAKE_KINDS]);
    try {
      for (const f of fleet) {
        f.setKnobs({ reasoningChunks: 3, chunkCount: 4 });
        const body: any = await (await post(f, CHAT, chatBody(f))).json();
        const message = body.choices[0].message;
        const field = REASONING_FIELD[f.kind];
        assert.equal(message[field], 'reason0 reason1 reason2', f.kind);
        const other = field === 'reasoning' ? 'reasoning_content' : 'reasoning';
        assert.equal(message[other], undefined, `${f.kind} uses one field`);
        assert.equal(message.content, 'tok0 tok1 tok2 tok3');
        assert.equal(body.usage.completion_tokens, 7, f.kind);
        if (f.kind === 'openrouter') assert.equal(body.usage.completion_tokens_details.reasoning_tokens, 3);
      }
    } finally {
      await Promise.all(fleet.map((f) => f.close()));
    }
  });

  test("stream: N reasoning deltas before the content, in the kind's field and delta style", async () => {
    for (const kind of FAKE_KINDS) {
      await withFake(kind, { reasoningChunks: 2, chunkCount: 3 }, async (f) => {
        const { chunks, done } = chunksOf(await (await post(f, CHAT, streamBody(f))).text());
        assert.ok(done);
        const deltas = chunks.filter((c) => c.choices.length > 0).map((c) => c.choices[0].delta);
        const reasoning = deltas.filter((d) => d[REASONING_FIELD[kind]] !== undefined);
        assert.deepEqual(
          reasoning.map((d) => d[REASONING_FIELD[kind]]),
          ['reason0', ' reason1'],
          kind,
        );
        assert.deepEqual(deltas.slice(1, 3), reasoning, `${kind}: right after the role chunk`);
        if (kind === 'ollama' || kind === 'openrouter')
          for (const d of reasoning) assert.deepEqual([d.role, d.content], ['assistant', '']);
        else for (const d of reasoning) assert.deepEqual(Object.keys(d), [REASONING_FIELD[kind]]);
        assert.equal(contentOf(chunks), 'tok0 tok1 tok2');
        assert.equal(chunks.at(-1).usage.completion_tokens, 5);
      });
    }
  });

  test('reasoning comes out of max_tokens first; text completions have none', () =>
    withFake('vllm', { reasoningChunks: 3 }, async (f) => {
      const body: any = await (await post(f, CHAT, chatBody(f, { max_tokens: 5 }))).json();
      assert.equal(body.choices[0].message.reasoning_content, 'reason0 reason1 reason2');
      assert.equal(body.choices[0].message.content, 'tok0 tok1');
      assert.equal(body.choices[0].finish_reason, 'length');
      const text: any = await (await post(f, '/v1/completions', { model: f.models[0], prompt: 'x' })).json();
      assert.equal(text.usage.completion_tokens, 8);
      assert.equal(text.choices[0].text, 'tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7');
    }));
});

describe('tool-call knobs', () => {
  test("toolCallName and toolCallArguments replace get_weather's, stream and not", () =>
    withFake(
      'llamacpp',
      { toolCall: true, toolCallName: 'search', toolCallArguments: '{"query":"fakes"}', chunkCount: 3 },
      async (f) => {
        const whole: any = await (await post(f, CHAT, chatBody(f))).json();
        assert.deepEqual(
          whole.choices[0].message.tool_calls.map((t: any) => [t.function.name, t.function.arguments]),
          [['search', '{"query":"fakes"}']],
        );
        const { chunks } = chunksOf(await (await post(f, CHAT, streamBody(f))).text());
        const calls = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
        assert.equal(calls[0].function.name, 'search');
        assert.equal(calls.map((t: any) => t.function.arguments).join(''), '{"query":"fakes"}');
        assert.equal(calls.filter((t: any) => t.function.arguments !== '').length, 3, 'split over chunkCount chunks');
      },
    ));

  test('parallelToolCalls: that many calls, distinct ids, one finish_reason tool_calls', () =>
    withFake('openrouter', { toolCall: true, parallelToolCalls: 3 }, async (f) => {
      const body: any = await (await post(f, CHAT, chatBody(f))).json();
      const calls = body.choices[0].message.tool_calls;
      assert.equal(calls.length, 3);
      assert.equal(new Set(calls.map((c: any) => c.id)).size, 3);
      for (const c of calls)
        assert.deepEqual(JSON.parse(c.function.arguments), { city: 'New York City', unit: 'celsius' });
      assert.equal(body.choices[0].finish_reason, 'tool_calls');
      assert.equal(body.usage.completion_tokens, 24);
    }));

  test('a request ending in a tool result gets a normal text reply when toolCall is off', () =>
    withFake('ollama', {}, async (f) => {
      const messages = [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '21°C' },
      ];
      const body: any = await (await post(f, CHAT, chatBody(f, { messages }))).json();
      assert.equal(body.choices[0].message.content, 'tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7');
      assert.equal(body.choices[0].finish_reason, 'stop');
      assert.deepEqual(f.servedOrder, ['weather?']);
    }));

  test('toolCallOnce ends an agent loop driven by the openai SDK; without it every turn calls', async () => {
    for (const once of [true, false]) {
      await withFake('vllm', { toolCall: true, toolCallOnce: once }, async (f) => {
        const client = new OpenAI({ baseURL: `${f.url}/v1`, apiKey: 'unused', maxRetries: 0 });
        const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'weather in NYC?' }];
        let turns = 0;
        for (; turns < 4; turns++) {
          const r = await client.chat.completions.create({
            model: f.models[0]!,
            messages,
            tools: [TOOL as OpenAI.ChatCompletionTool],
          });
          const choice = r.choices[0]!;
          if (choice.finish_reason !== 'tool_calls') break;
          messages.push(choice.message);
          for (const call of choice.message.tool_calls ?? [])
            messages.push({ role: 'tool', tool_call_id: call.id, content: '21°C' });
        }
        if (once) {
          assert.equal(turns, 1, 'one tool turn, then text');
          assert.equal(f.requests.at(-1)!.body.messages.at(-1).role, 'tool');
          assert.equal(messages.at(-1)!.role, 'tool');
        } else {
          assert.equal(turns, 4, 'the loop would not end');
        }
      });
    }
  });
});
