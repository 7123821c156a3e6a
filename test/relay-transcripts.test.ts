/**
 * The real OpenAI SSE transcripts in test/fixtures run through the gateway over sockets:
 * with the client asking for usage the bytes arrive unchanged; without, only the extra usage
 * chunk (which the gateway asked for) is gone; the SDK assembles the tool calls.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startReplay } from './fakes/replay.ts';
import { fixturePath } from './helpers/fixtures.ts';
import { startGateway } from './helpers/gateway.ts';

const TRANSCRIPTS = [
  'llm/openai/chat_completions_stream_tool_call_usage.sse.txt',
  'llm/openai/chat_completions_stream_parallel_tool_calls_usage.sse.txt',
];

const post = (url: string, body: object) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('real OpenAI transcripts through the relay', () => {
  for (const rel of TRANSCRIPTS) {
    test(rel, async (t) => {
      const bytes = readFileSync(fixturePath(rel));
      const model = JSON.parse(
        bytes
          .toString('utf8')
          .split('\n')
          .find((l) => l.startsWith('data: {'))!
          .slice(6),
      ).model as string;
      const replay = await startReplay(model, bytes, { chunkBytes: 97 });
      const gw = await startGateway([{ name: 'openai', url: replay.url, paid: true }]);
      t.after(async () => {
        await gw.close();
        await replay.close();
      });
      const messages = [{ role: 'user', content: 'weather?' }];

      const withUsage = await post(gw.url, {
        model: `openai/${model}`,
        stream: true,
        stream_options: { include_usage: true },
        messages,
      });
      assert.equal(withUsage.status, 200);
      assert.match(withUsage.headers.get('content-type')!, /^text\/event-stream/);
      assert.ok(Buffer.from(await withUsage.arrayBuffer()).equals(bytes), 'byte-identical relay');

      const without = await post(gw.url, { model: `openai/${model}`, stream: true, messages });
      const text = await without.text();
      const expected = bytes
        .toString('utf8')
        .split('\n\n')
        .filter((ev) => !/"choices":\s*\[\]/.test(ev))
        .join('\n\n');
      assert.equal(text, expected, 'identical but for the usage-only chunk');
      assert.ok(!text.includes('"usage":{'), 'no usage object reached the client');
      assert.deepEqual(
        replay.requests.at(-1).stream_options,
        { include_usage: true },
        'the gateway asked the backend for usage',
      );

      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const final = await client.chat.completions
        .stream({ model: `openai/${model}`, messages: [{ role: 'user', content: 'weather?' }] })
        .finalChatCompletion();
      const calls = final.choices[0].message.tool_calls ?? [];
      assert.ok(calls.length >= 1);
      for (const c of calls) if (c.type === 'function') assert.equal(typeof JSON.parse(c.function.arguments), 'object');
    });
  }
});
