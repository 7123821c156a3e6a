/**
 * The Vercel AI SDK's Anthropic provider (`@ai-sdk/anthropic`) against /v1/messages: text,
 * a stream, and a two-step tool loop, answered by a local chat backend through the bridge.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText } from 'ai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { weatherToolLoop } from './helpers/ai-sdk-tools.ts';

const MASTER = 'gw-master-ai-anthropic';

describe('the AI SDK Anthropic provider through the gateway', () => {
  let local: FakeBackend;
  let gw: TestGateway;
  const provider = () => createAnthropic({ baseURL: `${gw.url}/v1`, apiKey: MASTER });

  before(async () => {
    local = await startFake('llamacpp', { models: ['qwen3-8b'], knobs: { chunkCount: 4 } });
    gw = await startGateway([{ name: 'local', url: local.url }], {
      api_key: MASTER,
      virtual_models: { 'claude-*': { local: 'qwen3-8b' } },
    });
  });
  after(async () => {
    await gw?.close();
    await local?.close();
  });

  test('generateText and streamText on a claude-* id served by a local model', async () => {
    const { text } = await generateText({ model: provider()('claude-sonnet-4-5'), prompt: 'hello' });
    assert.equal(text, 'tok0 tok1 tok2 tok3');
    const streamed = streamText({ model: provider()('claude-sonnet-4-5'), prompt: 'again' });
    let collected = '';
    for await (const part of streamed.textStream) collected += part;
    assert.equal(collected, 'tok0 tok1 tok2 tok3');
    await waitFor(
      () => gw.gateway.callLog.recent({ backend: 'local' })[0]?.endpoint === '/v1/messages',
      'the SDK called /v1/messages',
    );
  });

  test('a tool loop over two steps', async () => {
    const { ran, result, toolMessage } = await weatherToolLoop(provider()('claude-haiku-4-5'), local);
    assert.equal(ran, 'Oslo');
    assert.equal(result.steps.length, 2);
    assert.match(String(toolMessage?.content), /sunny in Oslo/);
  });
});
