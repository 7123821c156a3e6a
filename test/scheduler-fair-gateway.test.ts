/**
 * Fair share over sockets: a real gateway, two users with their own keys (created in the users
 * store), the `openai` client, and a fake llama.cpp box that takes one call at a time. A's
 * backlog does not push B's calls to the back: B is served after at most one more of A's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const chatRequests = (f: FakeBackend) => f.requests.filter((r) => r.path === '/v1/chat/completions');
const lastUserText = (body: any) => body.messages.at(-1).content as string;

describe('fair share between users, end to end', () => {
  test('A parks 6 calls, B 2 later: B is served after at most one more of A’s; everything completes', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 4_000 } });
    const gw = await startGateway([{ name: 'box', url: box.url, max_concurrent: 1 }], { park_timeout_s: 120 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const clientOf = (name: string) =>
      new OpenAI({
        apiKey: gw.gateway.users.create({ name }).key,
        baseURL: `${gw.url}/v1`,
        maxRetries: 0,
      });
    const alice = clientOf('alice');
    const bob = clientOf('bob');
    const ask = (client: OpenAI, text: string) =>
      client.chat.completions.create({
        model: 'm',
        stream: false,
        messages: [{ role: 'user', content: text }],
      });
    const parked = () => gw.gateway.scheduler.snapshot().parked;

    const calls = [ask(alice, 'a-first')];
    await waitFor(() => box.inflight === 1, 'a-first running');
    box.setKnobs({ latencyMs: 200 }); // a-first holds the box 4 s, long enough to park the others; they take 0.2 s
    for (let i = 0; i < 6; i++) {
      calls.push(ask(alice, `a${i}`));
      await waitFor(() => parked().length === i + 1, `a${i} parked`);
    }
    for (let i = 0; i < 2; i++) {
      calls.push(ask(bob, `b${i}`));
      await waitFor(() => parked().length === 7 + i, `b${i} parked`);
    }
    const users = parked().map((p) => p.user);
    assert.equal(new Set(users).size, 2, `parked calls are charged to two users: ${users.join(',')}`);

    const answers = await Promise.all(calls);
    assert.ok(
      answers.every((a) => a.choices[0].message.content),
      'every call answered',
    );
    assert.equal(box.maxInflight, 1, 'one at a time on the box');
    const order = chatRequests(box)
      .sort((x, y) => x.startedAt - y.startedAt)
      .map((r) => lastUserText(r.body));
    assert.equal(order[0], 'a-first');
    const served = order.slice(1);
    const b0 = served.indexOf('b0');
    const b1 = served.indexOf('b1');
    assert.ok(b0 <= 1, `b0 served ${b0 + 1}th of the parked calls: ${served.join(',')}`);
    assert.ok(b1 - b0 <= 2, `b1 at most one of A's after b0: ${served.join(',')}`);
    assert.deepEqual(
      served.filter((n) => n.startsWith('a')),
      ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'],
      'FIFO within A',
    );
  });
});
