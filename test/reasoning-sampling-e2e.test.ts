/**
 * The reasoning switch and sampling defaults over sockets: each mechanism as the serving
 * backend's rule says, reported in `x-reasoning-control` and the call log, re-derived when the
 * call fails over to a backend with another rule; sampling precedence client > alias >
 * backend, the backend stage from whichever backend serves the call.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { request } from 'undici';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'gw-master-reasoning';

describe('reasoning control and sampling defaults', () => {
  let a: FakeBackend;
  let b: FakeBackend;
  let gw: TestGateway;

  const chat = async (model: string, extra: Record<string, unknown> = {}) => {
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
    });
    await res.body.text();
    return {
      status: res.statusCode,
      header: res.headers['x-reasoning-control'],
      backend: res.headers['x-gateway-backend'],
    };
  };
  const lastBody = (f: FakeBackend) => f.requests.filter((r) => r.method === 'POST').at(-1)!.body;

  before(async () => {
    a = await startFake('llamacpp', { models: ['qwen3-8b'] });
    b = await startFake('vllm', { models: ['Qwen/Qwen3-8B', 'mystery-model'] });
    gw = await startGateway(
      [
        { name: 'a', url: a.url, sampling_defaults: { temperature: 0.1, top_k: 20 } },
        { name: 'b', url: b.url, paid: true, sampling_defaults: { temperature: 0.9, min_p: 0.05 } },
      ],
      {
        api_key: MASTER,
        failure_threshold: 100,
        virtual_models: {
          both: { a: 'qwen3-8b', b: 'Qwen/Qwen3-8B' },
          onlyA: { a: 'qwen3-8b' },
          onlyB: { b: 'Qwen/Qwen3-8B' },
          odd: { b: 'mystery-model' },
          quiet: { a: 'qwen3-8b' },
        },
        alias_defaults: { both: { sampling_defaults: { top_p: 0.8 } }, quiet: { reasoning: 'off' } },
        reasoning_rules: [
          { model: 'qwen3*', backends: ['a'], mechanism: 'nothink_token', params: { token: '/no_think' } },
          { model: 'qwen/qwen3*', backends: ['b'], mechanism: 'enable_thinking' },
        ],
      },
    );
  });
  after(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
  });

  test("off through each backend's mechanism, with the header; the gateway-only field never reaches a backend", async () => {
    const onA = await chat('onlyA', { reasoning: 'off' });
    assert.equal(onA.header, 'off:nothink_token');
    const sentA = lastBody(a);
    assert.match(sentA.messages.at(-1).content, /\/no_think$/);
    assert.equal(sentA.reasoning, undefined);
    const onB = await chat('onlyB', { reasoning: 'off' });
    assert.equal(onB.header, 'off:enable_thinking');
    assert.deepEqual(lastBody(b).chat_template_kwargs, { enable_thinking: false });
    assert.equal(lastBody(b).reasoning, undefined);
  });

  test('reasoning_effort is a spelling of the switch; auto and nothing leave the body alone', async () => {
    assert.equal((await chat('onlyB', { reasoning_effort: 'minimal' })).header, 'off:enable_thinking');
    assert.equal((await chat('onlyB', { reasoning_effort: 'high' })).header, 'on:enable_thinking');
    assert.deepEqual(lastBody(b).chat_template_kwargs, { enable_thinking: true });
    const auto = await chat('onlyB', { reasoning: 'auto' });
    assert.equal(auto.header, undefined);
    assert.equal(lastBody(b).chat_template_kwargs, undefined);
    assert.equal(lastBody(b).reasoning, undefined, 'auto is stripped too');
    assert.equal((await chat('onlyB')).header, undefined);
  });

  test('no rule for the model: forwarded unchanged, reported unsupported, never failed', async () => {
    const res = await chat('odd', { reasoning: 'off' });
    assert.equal(res.status, 200);
    assert.equal(res.header, 'unsupported');
    assert.equal(lastBody(b).chat_template_kwargs, undefined);
  });

  test("the alias's default applies when the client gives none; the client's value wins", async () => {
    assert.equal((await chat('quiet')).header, 'off:nothink_token');
    assert.equal((await chat('quiet', { reasoning: 'on' })).header, 'on:nothink_token');
    assert.doesNotMatch(lastBody(a).messages.at(-1).content, /no_think/);
    assert.equal((await chat('quiet', { reasoning: 'auto' })).header, undefined);
  });

  test('an unknown switch value is a 400 naming it', async () => {
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model: 'onlyA', reasoning: 'maybe', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = (await res.body.json()) as { error: { param: string } };
    assert.equal(res.statusCode, 400);
    assert.equal(body.error.param, 'reasoning');
  });

  test('a failover re-derives the mechanism and the sampling defaults on the new backend', async () => {
    a.setKnobs({ errorStatus: 500, errorCount: 1 });
    const res = await chat('both', { reasoning: 'off', temperature: 0.5 });
    assert.equal(res.backend, 'b');
    assert.equal(res.header, 'off:enable_thinking');
    const tried = lastBody(a);
    assert.match(tried.messages.at(-1).content, /\/no_think$/, "the first attempt had a's mechanism");
    assert.deepEqual([tried.temperature, tried.top_p, tried.top_k, tried.min_p], [0.5, 0.8, 20, undefined]);
    const served = lastBody(b);
    assert.equal(served.messages.at(-1).content, 'hi', "b's mechanism does not touch the message");
    assert.deepEqual(served.chat_template_kwargs, { enable_thinking: false });
    assert.deepEqual([served.temperature, served.top_p, served.top_k, served.min_p], [0.5, 0.8, undefined, 0.05]);
    await waitFor(
      () =>
        gw.gateway.callLog
          .recent({ backend: 'b' })
          .some((r) => r.requested_model === 'both' && r.reasoning === 'off:enable_thinking'),
      'the call log has the failed-over call with it',
    );
  });

  test("Anthropic's thinking switch reaches a chat backend the same way", async () => {
    const sdk = new Anthropic({ baseURL: gw.url, apiKey: MASTER, maxRetries: 0 });
    const { response } = await sdk.messages
      .create({
        model: 'onlyB',
        max_tokens: 100,
        thinking: { type: 'disabled' },
        messages: [{ role: 'user', content: 'hi' }],
      })
      .withResponse();
    assert.equal(response.headers.get('x-reasoning-control'), 'off:enable_thinking');
    assert.deepEqual(lastBody(b).chat_template_kwargs, { enable_thinking: false });
  });

  test("Responses' reasoning.effort reaches the translated chat call", async () => {
    const res = await request(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model: 'onlyB', input: 'hi', reasoning: { effort: 'minimal' } }),
    });
    await res.body.text();
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-reasoning-control'], 'off:enable_thinking');
    assert.deepEqual(lastBody(b).chat_template_kwargs, { enable_thinking: false });
  });
});

test('reasoning_as_content: think_tags re-labels the reasoning as <think> content, streamed and not', async (t) => {
  const box = await startFake('llamacpp', { models: ['qwen3-8b'], knobs: { reasoningChunks: 2, chunkCount: 3 } });
  const gw = await startGateway([{ name: 'box', url: box.url, reasoning_as_content: 'think_tags' }], {
    api_key: MASTER,
  });
  t.after(async () => {
    await gw.close();
    await box.close();
  });
  const post = (stream: boolean) =>
    request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model: 'box/qwen3-8b', stream, messages: [{ role: 'user', content: 'hi' }] }),
    });
  const plain = (await (await post(false)).body.json()) as {
    choices: { message: { content: string; reasoning_content?: string } }[];
  };
  assert.match(plain.choices[0].message.content, /^<think>[\s\S]+<\/think>[\s\S]*tok0/);
  assert.equal(plain.choices[0].message.reasoning_content, undefined);
  const streamed = await (await post(true)).body.text();
  const content = streamed
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)).choices?.[0]?.delta?.content ?? '')
    .join('');
  assert.match(content, /^<think>[\s\S]+<\/think>[\s\S]*tok0 tok1 tok2$/);
  assert.doesNotMatch(streamed, /reasoning_content":"[^"]/, 'no reasoning field left with text in it');
});
