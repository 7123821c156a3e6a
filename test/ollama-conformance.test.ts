/**
 * The fake Ollama server and the gateway's translated Ollama answers, held to the examples of
 * ollama/ollama `docs/api.md` (test/fixtures/llm/ollama/, see its README): every field a real
 * body has, at every level, with the same JSON type, and streams as NDJSON (one object a line).
 * Both are checked by the same table: the fake must answer like Ollama, and so must the
 * gateway when its answer comes from a chat backend through the bridge.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertSameShape, startFake, TOOL_NAME, type FakeBackend } from './fakes/index.ts';
import { startOllamaFake, type OllamaFake } from './fakes/ollama-server.ts';
import { readFixture, readFixtureJson } from './helpers/fixtures.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const DIR = 'llm/ollama';
const fixture = (name: string) => readFixtureJson(`${DIR}/${name}`);
const ndjsonFixture = (name: string) =>
  readFixture(`${DIR}/${name}`)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

/** Fields of the 2023 examples that Ollama no longer writes (`images: null`; `context`, deprecated). */
const DROPPED = ['$.message.images', '$.context'];

const tools = [
  {
    type: 'function',
    function: { name: TOOL_NAME, parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
];

async function postJson(url: string, body: unknown): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** The table both servers answer: [what, request, fixture, streamed]. */
function conformanceTable(base: () => string, chatModel: () => string, embedModel: () => string) {
  const messages = [{ role: 'user', content: 'why is the sky blue?' }];
  return [
    ['chat, streamed', '/api/chat', () => ({ model: chatModel(), messages }), 'api_chat_stream_docs.ndjson'],
    ['chat, whole', '/api/chat', () => ({ model: chatModel(), messages, stream: false }), 'api_chat_docs.json'],
    [
      'chat with tools, streamed',
      '/api/chat',
      () => ({ model: chatModel(), messages, tools }),
      'api_chat_stream_tools_docs.ndjson',
    ],
    [
      'chat with tools, whole',
      '/api/chat',
      () => ({ model: chatModel(), messages, tools, stream: false }),
      'api_chat_tools_docs.json',
    ],
    [
      'generate, streamed',
      '/api/generate',
      () => ({ model: chatModel(), prompt: 'why?' }),
      'api_generate_stream_docs.ndjson',
    ],
    [
      'generate, whole',
      '/api/generate',
      () => ({ model: chatModel(), prompt: 'why?', stream: false }),
      'api_generate_docs.json',
    ],
    ['embed', '/api/embed', () => ({ model: embedModel(), input: 'why is the sky blue?' }), 'api_embed_docs.json'],
    ['embeddings', '/api/embeddings', () => ({ model: embedModel(), prompt: 'llamas' }), 'api_embeddings_docs.json'],
  ].map(([what, path, body, file]) => ({
    what: what as string,
    run: async () => {
      const got = await postJson(`${base()}${path as string}`, (body as () => unknown)());
      assert.equal(got.status, 200, got.text);
      if ((file as string).endsWith('.ndjson')) {
        assert.equal(got.type, 'application/x-ndjson');
        assert.ok(got.text.endsWith('\n'));
        const lines = got.text
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
        const [first, last] = ndjsonFixture(file as string);
        // the fixture's first line is a fragment of the answer (text or a tool call): find its kind
        const wantsCalls = JSON.stringify(first).includes('tool_calls');
        const fragment = lines.find((l) => !l.done && (wantsCalls ? l.message?.tool_calls : true));
        assertSameShape(fragment, first, '$', { ignore: DROPPED });
        assertSameShape(lines.at(-1), last, '$', { ignore: DROPPED });
        assert.ok(lines.slice(0, -1).every((l) => l.done === false));
      } else {
        assert.match(got.type, /^application\/json/);
        assertSameShape(JSON.parse(got.text), fixture(file as string), '$', { ignore: DROPPED });
      }
    },
  }));
}

describe('the fake Ollama server against docs/api.md', () => {
  let box: OllamaFake;
  before(async () => {
    box = await startOllamaFake({ knobs: { toolCall: true } });
  });
  after(() => box?.close());

  for (const row of conformanceTable(
    () => box.url,
    () => 'llama3.2:latest',
    () => 'all-minilm:latest',
  ))
    test(row.what, row.run);

  test('tags, ps, show and version', async () => {
    assertSameShape(await (await fetch(`${box.url}/api/tags`)).json(), fixture('api_tags_docs.json'));
    assertSameShape(await (await fetch(`${box.url}/api/ps`)).json(), fixture('api_ps_docs.json'));
    assertSameShape(await (await fetch(`${box.url}/api/version`)).json(), fixture('api_version_docs.json'));
    const show = await postJson(`${box.url}/api/show`, { model: 'llama3.2:latest' });
    assertSameShape(JSON.parse(show.text), fixture('api_show_docs.json'), '$', {
      ignore: ['$.model_info.general.quantization_version', ...showInfoKeysOfLlava()],
    });
  });

  test("errors in Ollama's words", async () => {
    const unknown = await postJson(`${box.url}/api/chat`, { model: 'nope', messages: [] });
    assert.equal(unknown.status, 404);
    assert.deepEqual(JSON.parse(unknown.text), { error: "model 'nope' not found" });
    const missing = await postJson(`${box.url}/api/chat`, { messages: [] });
    assert.deepEqual([missing.status, JSON.parse(missing.text)], [400, { error: 'model is required' }]);
    const empty = await fetch(`${box.url}/api/generate`, { method: 'POST' });
    assert.deepEqual([empty.status, await empty.json()], [400, { error: 'missing request body' }]);
    const root = await fetch(`${box.url}/`);
    assert.equal(await root.text(), 'Ollama is running');
  });
});

/** model_info keys of the docs' llava example the fake's smaller set leaves out (model-specific facts). */
function showInfoKeysOfLlava(): string[] {
  const info = (fixture('api_show_docs.json') as { model_info: Record<string, unknown> }).model_info;
  const kept = ['general.architecture', 'general.file_type', 'general.parameter_count', 'llama.context_length'];
  return Object.keys(info)
    .filter((k) => !kept.includes(k) && k !== 'llama.embedding_length' && k !== 'tokenizer.ggml.model')
    .map((k) => `$.model_info.${k}`);
}

describe("the gateway's translated Ollama answers against docs/api.md", () => {
  let gpu: FakeBackend;
  let gw: TestGateway;
  before(async () => {
    gpu = await startFake('llamacpp', { models: ['qwen3-8b', 'nomic-embed'], knobs: { toolCall: true } });
    gw = await startGateway([{ name: 'gpu', url: gpu.url, local: true }]);
  });
  after(async () => {
    await gw?.close();
    await gpu?.close();
  });

  for (const row of conformanceTable(
    () => gw.url,
    () => 'qwen3-8b',
    () => 'nomic-embed',
  )) {
    test(row.what, async () => {
      // the fake llama.cpp calls a tool whenever asked to; without tools it must answer in text
      gpu.setKnobs({ toolCall: row.what.includes('tools') });
      await row.run();
    });
  }

  test('tags, ps and version', async () => {
    assertSameShape(await (await fetch(`${gw.url}/api/tags`)).json(), fixture('api_tags_docs.json'), '$', {
      ignore: ['$.models[0].details.families'],
    });
    assertSameShape(await (await fetch(`${gw.url}/api/ps`)).json(), fixture('api_ps_docs.json'), '$', {
      ignore: ['$.models[0].details.families'],
    });
    assertSameShape(await (await fetch(`${gw.url}/api/version`)).json(), fixture('api_version_docs.json'));
  });
});
