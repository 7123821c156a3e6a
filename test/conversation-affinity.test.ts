/**
 * Conversation affinity's pure parts: the key of a conversation (the same on every turn, the
 * client's `x-session-id` when usable, apart per caller and model), its seed per surface (text
 * only), and the bounded store (TTL, failures, a box marked down, eviction of the oldest).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ConversationAffinity,
  conversationKey,
  sessionIdOf,
  SESSION_ID_MAX_LENGTH,
} from '../src/routing/conversation-affinity.ts';
import { conversationSeed, SEED_PART_MAX } from '../src/routing/conversation-seed.ts';
import { promptTokenEstimate } from '../src/surfaces/prompt-estimate.ts';

const system = { role: 'system', content: 'You are terse.' };
const turn1 = [system, { role: 'user', content: 'What is a B-tree?' }];
const turn2 = [...turn1, { role: 'assistant', content: 'A balanced tree.' }, { role: 'user', content: 'And a B+?' }];
const chatKey = (messages: unknown[], user = 'u:1', model = 'm', sessionId?: string) =>
  conversationKey({ sessionId, user, model, seed: () => conversationSeed('chat', { messages }) });

describe('the key of a conversation', () => {
  test('is the same on every turn of one chat conversation', () => {
    assert.ok(chatKey(turn1));
    assert.equal(chatKey(turn2), chatKey(turn1));
  });

  test('differs by caller, by model, by system prompt and by first question', () => {
    const base = chatKey(turn1);
    assert.notEqual(chatKey(turn1, 'u:2'), base);
    assert.notEqual(chatKey(turn1, 'u:1', 'other'), base);
    assert.notEqual(chatKey([{ role: 'system', content: 'You are verbose.' }, turn1[1]]), base);
    assert.notEqual(chatKey([system, { role: 'user', content: 'What is a trie?' }]), base);
  });

  test("the client's session id wins over the seed, apart per caller", () => {
    const other = [{ role: 'user', content: 'something else entirely' }];
    assert.equal(chatKey(turn1, 'u:1', 'm', 'sess-42'), chatKey(other, 'u:1', 'm', 'sess-42'));
    assert.notEqual(chatKey(turn1, 'u:1', 'm', 'sess-42'), chatKey(turn1));
    assert.notEqual(chatKey(turn1, 'u:1', 'm', 'sess-42'), chatKey(turn1, 'u:2', 'm', 'sess-42'));
  });

  test('a session id that is too long, repeated, blank or has control characters is ignored', () => {
    assert.equal(sessionIdOf('abc-123'), 'abc-123');
    assert.equal(sessionIdOf(' spaced '), 'spaced');
    assert.equal(sessionIdOf('x'.repeat(SESSION_ID_MAX_LENGTH)), 'x'.repeat(SESSION_ID_MAX_LENGTH));
    assert.equal(sessionIdOf('x'.repeat(SESSION_ID_MAX_LENGTH + 1)), undefined);
    assert.equal(sessionIdOf(['a', 'b']), undefined);
    assert.equal(sessionIdOf('   '), undefined);
    assert.equal(sessionIdOf('a\u0001b'), undefined);
    assert.equal(sessionIdOf('café'), undefined);
    assert.equal(sessionIdOf(undefined), undefined);
  });

  test('no user text and no session id: no key (no affinity)', () => {
    assert.equal(chatKey([system]), undefined);
    assert.equal(chatKey([]), undefined);
    const imageOnly = { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] };
    assert.equal(chatKey([imageOnly]), undefined);
  });
});

describe('the seed of a conversation, by surface', () => {
  test('chat: the first system or developer message and the first user message; text parts only', () => {
    const developer = { role: 'developer', content: 'Be brief.' };
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };
    const withImage = [developer, { role: 'user', content: [{ type: 'text', text: 'Describe' }, image] }];
    const textOnly = [developer, { role: 'user', content: [{ type: 'text', text: 'Describe' }] }];
    assert.equal(conversationSeed('chat', { messages: withImage }), conversationSeed('chat', { messages: textOnly }));
    assert.match(conversationSeed('chat', { messages: withImage })!, /Be brief\.\0Describe/);
  });

  test('Anthropic Messages: system (a string or text blocks) and the first user message', () => {
    const blocks = { system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }] };
    const first = { ...blocks, messages: [{ role: 'user', content: [{ type: 'text', text: 'fix the bug' }] }] };
    const later = {
      ...blocks,
      messages: [
        ...first.messages,
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: { path: 'a.ts' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'code' }] },
      ],
    };
    assert.ok(conversationSeed('messages', first));
    assert.equal(conversationSeed('messages', later), conversationSeed('messages', first));
    assert.notEqual(conversationSeed('messages', { ...first, system: 'another' }), conversationSeed('messages', first));
  });

  test('Responses: instructions and the first user item, stored turns first; a string input is one', () => {
    const first = { instructions: 'Be kind.', input: 'hello' };
    const items = { ...first, input: [{ role: 'user', content: [{ type: 'input_text', text: 'hello' }] }] };
    assert.equal(conversationSeed('responses', items), conversationSeed('responses', first));
    // the next turn by previous_response_id: its input is the new message, the history holds the first
    const history = [
      { role: 'user', content: 'hello' },
      { type: 'message', role: 'assistant', content: 'hi' },
    ];
    const next = conversationSeed('responses', { instructions: 'Be kind.', input: 'how are you?' }, history);
    assert.equal(next, conversationSeed('responses', first));
  });

  test('a huge first message counts up to its first SEED_PART_MAX characters', () => {
    const big = 'a'.repeat(SEED_PART_MAX);
    const seedA = conversationSeed('chat', { messages: [{ role: 'user', content: `${big}tail one` }] });
    const seedB = conversationSeed('chat', { messages: [{ role: 'user', content: `${big}tail two` }] });
    assert.equal(seedA, seedB);
  });

  test('odd shapes never throw', () => {
    const odd = [
      { messages: 'x' },
      { messages: [null, 3, { role: 'user' }] },
      { system: 5, messages: [{ role: 'user', content: 7 }] },
    ];
    for (const body of odd) {
      assert.equal(conversationSeed('chat', body), undefined);
      assert.equal(conversationSeed('messages', body), undefined);
    }
    assert.equal(conversationSeed('responses', { input: [null, { role: 'user', content: null }] }), undefined);
  });
});

describe('the prompt size estimate', () => {
  test('grows with the prompt text, about four characters a token, images at a flat cost', () => {
    const small = promptTokenEstimate('chat', { messages: [{ role: 'user', content: 'x'.repeat(400) }] })!;
    const large = promptTokenEstimate('chat', { messages: [{ role: 'user', content: 'x'.repeat(40_000) }] })!;
    assert.ok(small >= 100 && small < 120, `${small}`);
    assert.ok(large >= 10_000 && large < 10_100, `${large}`);
    assert.equal(promptTokenEstimate('responses', { instructions: 'x'.repeat(40), input: 'y'.repeat(360) }), 100);
    const history = [{ role: 'user', content: 'z'.repeat(200) }];
    assert.equal(promptTokenEstimate('responses', { input: 'y'.repeat(200) }, history), 100);
    assert.equal(promptTokenEstimate('completions', { prompt: 'p'.repeat(80) }), 20);
    assert.equal(promptTokenEstimate('embeddings', { input: ['a'.repeat(40), 'b'.repeat(40)] }), 20);
    assert.equal(promptTokenEstimate('transcriptions', {}), undefined);
  });
});

describe('the store of where conversations were answered', () => {
  test('a conversation sticks for its TTL after its last answer', () => {
    const store = new ConversationAffinity();
    store.remember('k', 'a', 1000, 300_000);
    assert.equal(store.backendFor('k', 1000 + 299_999), 'a');
    store.remember('k', 'a', 200_000, 300_000);
    assert.equal(store.backendFor('k', 450_000), 'a', 'the second answer restarted the TTL');
    assert.equal(store.backendFor('k', 500_000), undefined);
    assert.equal(store.size, 0, 'an expired entry goes when read');
  });

  test('TTL 0 is affinity off: nothing is remembered', () => {
    const store = new ConversationAffinity();
    store.remember('k', 'a', 0, 0);
    assert.equal(store.backendFor('k', 0), undefined);
  });

  test('a failure on its box drops it; a failure on another box does not', () => {
    const store = new ConversationAffinity();
    store.remember('k', 'a', 0, 1000);
    store.forget('k', 'b');
    assert.equal(store.backendFor('k', 1), 'a');
    store.forget('k', 'a');
    assert.equal(store.backendFor('k', 1), undefined);
    store.remember('k', 'b', 2, 1000);
    assert.equal(store.backendFor('k', 3), 'b', 'the next answer ties it to the box that gave it');
  });

  test('a box marked down loses all its conversations, the others keep theirs', () => {
    const store = new ConversationAffinity();
    store.remember('k1', 'a', 0, 1000);
    store.remember('k2', 'a', 0, 1000);
    store.remember('k3', 'b', 0, 1000);
    store.remember('k2', 'b', 0, 1000); // moved: no longer a's
    store.forgetBackend('a');
    assert.equal(store.backendFor('k1', 1), undefined);
    assert.equal(store.backendFor('k2', 1), 'b');
    assert.equal(store.backendFor('k3', 1), 'b');
    store.forgetBackend('b');
    assert.equal(store.size, 0);
  });

  test('bounded: past the limit the least recently answered conversation goes', () => {
    const store = new ConversationAffinity(3);
    store.remember('k1', 'a', 0, 1000);
    store.remember('k2', 'a', 0, 1000);
    store.remember('k3', 'a', 0, 1000);
    store.remember('k1', 'a', 1, 1000); // answered again: now the newest
    store.remember('k4', 'b', 2, 1000);
    assert.equal(store.size, 3);
    assert.equal(store.backendFor('k2', 3), undefined);
    for (const k of ['k1', 'k3', 'k4']) assert.ok(store.backendFor(k, 3), k);
    store.forgetBackend('a');
    assert.equal(store.size, 1, 'the evicted key left the per-box index too');
  });
});
