/**
 * Conversation affinity over sockets, with the official SDKs: a turn's ticket carries the box
 * that answered the conversation's previous turn (`stickTo`), its prompt size, user and spill
 * threshold; the client's `x-session-id` names the conversation when sent; a box that fails a
 * turn, or is marked down, loses the conversation, and the box that took over keeps it.
 *
 * The tickets are read off the real scheduler (its `acquire`, wrapped to record what it is
 * given); where the call lands is the real scheduler's choice. The tests named "lands" need
 * the scheduler's stickiness term (part "score" of issue 19); the others hold on their own.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { GatewayConfig } from '../src/config/types.ts';
import type { Ticket } from '../src/scheduler/index.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'affinity-master-key';

/** Every ticket the gateway's scheduler is asked for, in order. */
function recordTickets(gw: TestGateway): Ticket[] {
  const tickets: Ticket[] = [];
  const scheduler = gw.gateway.scheduler;
  const acquire = scheduler.acquire.bind(scheduler);
  scheduler.acquire = (ticket) => {
    tickets.push(ticket);
    return acquire(ticket);
  };
  return tickets;
}

/** Two equal boxes serving `m` (`a` first in candidate order) behind a gateway, and an OpenAI client of it. */
async function startPair(extra: Partial<GatewayConfig> = {}) {
  const a = await startFake('llamacpp', { models: ['m'] });
  const b = await startFake('llamacpp', { models: ['m'] });
  // failures never mark a box down here: a failed turn is the only thing that moves a conversation
  const gw = await startGateway(
    [
      { name: 'a', url: a.url },
      { name: 'b', url: b.url },
    ],
    { api_key: MASTER, failure_threshold: 100, ...extra },
  );
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0, timeout: 10_000 });
  return { a, b, gw, client };
}

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** One conversation: each turn appends the answer and the next question, as a chat client does. */
class Conversation {
  readonly messages: Message[];

  constructor(
    private readonly client: OpenAI,
    system: string,
    private readonly headers: Record<string, string> = {},
  ) {
    this.messages = [{ role: 'system', content: system }];
  }

  /** Asks `question`; answers the backend that served it. */
  async ask(question: string, stream = false): Promise<string> {
    this.messages.push({ role: 'user', content: question });
    const options = { headers: this.headers };
    const body = { model: 'm', messages: this.messages };
    const { data, response } = stream
      ? await this.client.chat.completions.create({ ...body, stream: true }, options).withResponse()
      : await this.client.chat.completions.create(body, options).withResponse();
    let answer = '';
    if (Symbol.asyncIterator in data) {
      for await (const chunk of data) answer += chunk.choices[0]?.delta?.content ?? '';
    } else {
      answer = data.choices[0].message.content ?? '';
    }
    this.messages.push({ role: 'assistant', content: answer });
    return response.headers.get('x-gateway-backend') ?? '';
  }
}

describe('conversation affinity', () => {
  let a: FakeBackend;
  let b: FakeBackend;
  let gw: TestGateway;
  let client: OpenAI;
  let tickets: Ticket[];

  before(async () => {
    ({ a, b, gw, client } = await startPair({ alias_defaults: { m: { spill_after_s: 7 } } }));
    tickets = recordTickets(gw);
  });
  after(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
  });
  beforeEach(async () => {
    a.setKnobs({ errorStatus: 0, errorCount: 0, refuse: false });
    b.setKnobs({ errorStatus: 0, errorCount: 0, refuse: false });
    await gw.gateway.discovery.pollAll();
  });

  test("a turn's ticket carries its prompt size, its user and its alias's spill threshold", async () => {
    const talk = new Conversation(client, 'You answer in one word.');
    await talk.ask(`Summarise this: ${'lorem ipsum '.repeat(400)}`);
    const ticket = tickets.at(-1)!;
    const tokens = ticket.promptTokens!;
    assert.ok(tokens > 1000 && tokens < 1400, `about 4,800 characters: ${tokens}`);
    assert.equal(ticket.user?.key, 'master');
    assert.equal(ticket.spillAfterMs, 7000, 'alias_defaults.m.spill_after_s');
    assert.equal(typeof ticket.paidAllowed, 'function');
    assert.equal(ticket.paidAllowed!(), true);
    assert.equal(ticket.stickTo, undefined, 'a first turn sticks to nothing');
  });

  test("each turn's ticket sticks to the box that answered the turn before (streams too)", async () => {
    const talk = new Conversation(client, 'You are a database tutor.');
    const first = await talk.ask('What is a B-tree?');
    assert.ok(first === 'a' || first === 'b');
    const second = await talk.ask('And a B+ tree?', true);
    assert.equal(tickets.at(-1)!.stickTo, first);
    await talk.ask('Which one do databases use?');
    assert.equal(tickets.at(-1)!.stickTo, second, 'the box of the last answer');
  });

  test('a box that fails a turn loses the conversation: the box that took over has it next', async () => {
    const talk = new Conversation(client, 'You are a failover tutor.');
    const first = await talk.ask('What is a quorum?');
    const other = first === 'a' ? 'b' : 'a';
    (first === 'a' ? a : b).setKnobs({ errorStatus: 500, errorCount: 1 });
    assert.equal(await talk.ask('And a split brain?'), other, 'failed over within the turn');
    assert.equal(tickets.at(-1)!.stickTo, first, 'the failed turn had asked for the old box');
    await talk.ask('How do I avoid one?');
    assert.equal(tickets.at(-1)!.stickTo, other, 'the next turn asks for the box that took over');
  });

  test('a box that fails a turn loses the conversation, which stays on the box that took over (lands)', async () => {
    const talk = new Conversation(client, 'You are a replication tutor.');
    const first = await talk.ask('What is a leader?');
    const other = first === 'a' ? 'b' : 'a';
    (first === 'a' ? a : b).setKnobs({ errorStatus: 500, errorCount: 1 });
    assert.equal(await talk.ask('And a follower?'), other);
    // the failed box answers again, and is the one candidate order prefers: the conversation stays
    for (let turn = 3; turn <= 5; turn++) assert.equal(await talk.ask(`question ${turn}`), other, `turn ${turn}`);
  });

  test('a box marked down loses its conversations at once', async () => {
    const talk = new Conversation(client, 'You are a probe tutor.');
    const first = await talk.ask('What is a health check?');
    (first === 'a' ? a : b).setKnobs({ refuse: true });
    await gw.gateway.discovery.pollAll();
    assert.equal(gw.gateway.registry.get(first)!.healthy, false);
    (first === 'a' ? a : b).setKnobs({ refuse: false });
    await gw.gateway.discovery.pollAll();
    assert.equal(gw.gateway.registry.get(first)!.healthy, true, 'back up before the next turn');
    await talk.ask('And a liveness probe?');
    assert.equal(tickets.at(-1)!.stickTo, undefined, 'its box went down in between');
  });

  test("the client's x-session-id names the conversation, whatever its messages", async () => {
    const one = new Conversation(client, 'First system prompt.', { 'x-session-id': 'session-4711' });
    const box = await one.ask('hello');
    const two = new Conversation(client, 'An unrelated system prompt.', { 'x-session-id': 'session-4711' });
    await two.ask('something else');
    assert.equal(tickets.at(-1)!.stickTo, box, 'the same session id');
    const three = new Conversation(client, 'First system prompt.', { 'x-session-id': 'session-other' });
    await three.ask('hello');
    assert.equal(tickets.at(-1)!.stickTo, undefined, "the first conversation's messages under another session id");
    const plain = new Conversation(client, 'Third system prompt.');
    const plainBox = await plain.ask('hello');
    const tooLong = new Conversation(client, 'Third system prompt.', { 'x-session-id': 'x'.repeat(300) });
    await tooLong.ask('hello');
    assert.equal(tickets.at(-1)!.stickTo, plainBox, 'an unusable session id is ignored: the messages name it');
  });

  test('an Anthropic Messages conversation (the Anthropic SDK, through the bridge) sticks too', async () => {
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: MASTER, maxRetries: 0, timeout: 10_000 });
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: 'fix the test' }] }];
    const { data, response } = await anthropic.messages
      .create({ model: 'm', max_tokens: 100, system, messages })
      .withResponse();
    const box = response.headers.get('x-gateway-backend');
    messages.push({ role: 'assistant', content: data.content }, { role: 'user', content: 'now run it' });
    await anthropic.messages.stream({ model: 'm', max_tokens: 100, system, messages }).finalMessage();
    assert.equal(tickets.at(-1)!.stickTo, box);
  });

  test('a Responses conversation by previous_response_id sticks too', async () => {
    const ask = { model: 'm', instructions: 'Be kind.' };
    const first = await client.responses.create({ ...ask, input: 'my name is Ada', store: true }).withResponse();
    const box = first.response.headers.get('x-gateway-backend');
    await client.responses.create({ ...ask, input: 'what is my name?', previous_response_id: first.data.id });
    assert.equal(tickets.at(-1)!.stickTo, box);
  });
});

describe('conversation affinity against speed', () => {
  test("two conversations on two boxes each stay on their own box, the slower box's too (lands)", async (t) => {
    const { a, b, gw, client } = await startPair();
    t.after(async () => {
      await gw.close();
      await a.close();
      await b.close();
    });
    // a is the slow box: both stream 20 tokens (enough to be measured), a in 0.2 s, b at once
    a.setKnobs({ tokensPerSecond: 100, chunkCount: 20 });
    b.setKnobs({ chunkCount: 20 });
    const slow = new Conversation(client, 'Conversation one.');
    const fast = new Conversation(client, 'Conversation two.');
    const slowBox = await slow.ask('first question', true);
    const fastBox = await fast.ask('first question', true);
    assert.deepEqual([slowBox, fastBox], ['a', 'b'], 'each box measured once (never measured: tried first)');
    const speeds = new Map(gw.gateway.scheduler.snapshot().backends.map((s) => [s.name, s.speed]));
    assert.ok(speeds.get('a')! < speeds.get('b')!, `b is measured faster: ${JSON.stringify([...speeds])}`);
    for (let turn = 2; turn <= 4; turn++) {
      assert.equal(await slow.ask(`question ${turn}`, true), 'a', `turn ${turn} of conversation one (the slower box)`);
      assert.equal(await fast.ask(`question ${turn}`, true), 'b', `turn ${turn} of conversation two`);
    }
  });
});

describe('conversation affinity off', () => {
  test('affinity_ttl_s: 0 remembers nothing', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway([{ name: 'box', url: box.url }], { api_key: MASTER, affinity_ttl_s: 0 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const tickets = recordTickets(gw);
    const talk = new Conversation(new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 }), 'System.');
    await talk.ask('one');
    await talk.ask('two');
    assert.equal(tickets.length, 2);
    assert.ok(tickets.every((ticket) => ticket.stickTo === undefined));
  });
});
