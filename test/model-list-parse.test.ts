import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelList, type ModelListFilter } from '../src/backends/model-list.ts';
import { readFixtureJson } from './helpers/fixtures.ts';

const ALL: ModelListFilter = { chatOnly: false, serverlessOnly: false };
const CHAT: ModelListFilter = { chatOnly: true, serverlessOnly: false };
const SERVERLESS: ModelListFilter = { chatOnly: false, serverlessOnly: true };
const BOTH: ModelListFilter = { chatOnly: true, serverlessOnly: true };

const ids = (body: unknown, filter: ModelListFilter) => parseModelList(body, filter).map((m) => m.id);

test('OpenRouter full list: counts under each filter and known entries', () => {
  const body = readFixtureJson<{ data: any[] }>('llm/openrouter/api_v1_models_full.json');
  assert.equal(body.data.length, 371);
  // 12 models output images or audio; 33 are priced 0/0 (all 29 `:free` ones among them); 2 are both.
  assert.equal(parseModelList(body, ALL).length, 371);
  assert.equal(parseModelList(body, CHAT).length, 359);
  assert.equal(parseModelList(body, SERVERLESS).length, 338);
  assert.equal(parseModelList(body, BOTH).length, 328);

  const all = parseModelList(body, ALL);
  assert.deepEqual(
    all.find((m) => m.id === 'anthropic/claude-sonnet-4.6'),
    {
      id: 'anthropic/claude-sonnet-4.6',
      created: 1771342990,
      pricing: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
      context_length: 1000000,
    },
  );
  const chat = ids(body, CHAT);
  assert.ok(!chat.includes('google/gemini-2.5-flash-image'), 'image output is not chat');
  assert.ok(!chat.includes('openai/gpt-audio'), 'audio output is not chat');
  assert.ok(chat.includes('google/gemma-3-27b-it:free'));
  const serverless = ids(body, SERVERLESS);
  assert.ok(!serverless.includes('google/gemma-3-27b-it:free'));
  assert.ok(!serverless.includes('openrouter/free'), 'priced 0/0');
  assert.ok(serverless.includes('anthropic/claude-sonnet-4.6'));
  assert.ok(serverless.includes('openrouter/auto'), 'unknown price is not a zero price');
  assert.equal(all.find((m) => m.id === 'openrouter/auto')?.pricing, undefined, '"-1" means unknown');
  for (const model of all) {
    if (model.pricing) assert.ok(model.pricing.input >= 0 && model.pricing.output >= 0, model.id);
  }
});

test('OpenRouter selection: each filter keeps what it should', () => {
  const body = readFixtureJson('llm/openrouter/api_v1_models_selection.json');
  // openrouter/auto may answer with images (output_modalities text + image), so chat_only drops it.
  assert.deepEqual(ids(body, BOTH).sort(), ['ai21/jamba-large-1.7', 'anthropic/claude-sonnet-4.6']);
  assert.deepEqual(ids(body, CHAT).sort(), [
    'ai21/jamba-large-1.7',
    'anthropic/claude-sonnet-4.6',
    'google/gemma-3-27b-it:free',
  ]);
  assert.deepEqual(ids(body, SERVERLESS).sort(), [
    'ai21/jamba-large-1.7',
    'anthropic/claude-sonnet-4.6',
    'google/gemini-2.5-flash-image',
    'openai/gpt-5-image-mini',
    'openai/gpt-audio',
    'openrouter/auto',
  ]);
  const image = parseModelList(body, ALL).find((m) => m.id === 'google/gemini-2.5-flash-image');
  assert.deepEqual(image?.pricing, { input: 0.3, output: 2.5, cache_read: 0.03, cache_write: 0.0833333333333 });
  const jamba = parseModelList(body, ALL).find((m) => m.id === 'ai21/jamba-large-1.7');
  assert.deepEqual(jamba?.pricing, { input: 2, output: 8 });
  assert.equal(jamba?.context_length, 256000);
});

test('Together /v1/models: a bare array priced per million already', () => {
  const body = readFixtureJson('llm/together/v1_models.json');
  assert.deepEqual(parseModelList(body, BOTH), [
    {
      id: 'example-org/example-chat-7b',
      created: 1700000000,
      display_name: 'Example Chat (7B)',
      pricing: { input: 0.2, output: 0.4 },
      context_length: 8192,
    },
  ]);
});

test("Anthropic's list: created_at becomes unix seconds, display_name kept, type model is chat", () => {
  const body = {
    data: [{ type: 'model', id: 'claude-x', display_name: 'Claude X', created_at: '2025-09-29T00:00:00Z' }],
    has_more: false,
  };
  assert.deepEqual(parseModelList(body, BOTH), [{ id: 'claude-x', created: 1759104000, display_name: 'Claude X' }]);
});

test('Together: type decides chat_only; a 0/0 dedicated-only model fails serverless_only', () => {
  const body = [
    { id: 'a/chat', type: 'chat', pricing: { hourly: 0, input: 0.2, output: 0.6, base: 0, finetune: 0 } },
    { id: 'a/lang', type: 'language', pricing: { input: 0.1, output: 0.1 } },
    { id: 'a/image', type: 'image', pricing: { input: 0, output: 0 } },
    { id: 'a/embed', type: 'embedding', pricing: { input: 0.008, output: 0 } },
    { id: 'a/dedicated', type: 'chat', pricing: { hourly: 2.5, input: 0, output: 0, base: 0, finetune: 0 } },
  ];
  assert.deepEqual(ids(body, CHAT), ['a/chat', 'a/lang', 'a/dedicated']);
  assert.deepEqual(ids(body, SERVERLESS), ['a/chat', 'a/lang', 'a/embed']);
  assert.deepEqual(ids(body, BOTH), ['a/chat', 'a/lang']);
});

test('local servers: llama.cpp, llama-swap (both shapes), vLLM, Ollama (both) keep id, created, owner', () => {
  const cases: Array<[string, object[]]> = [
    [
      'llm/llamacpp/v1_models.json',
      [{ id: '../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf', created: 1735142223, owned_by: 'llamacpp' }],
    ],
    ['llm/llamaswap/v1_models_meta_state.json', [{ id: 'qwen3-8b', created: 1780000000, owned_by: 'llama-swap' }]],
    [
      'llm/llamaswap/v1_models_ASSEMBLED_current_shape.json',
      [{ id: 'm1', created: 1775097337, owned_by: 'llama-swap' }],
    ],
    [
      'llm/vllm/v1_models.json',
      [{ id: 'Qwen/Qwen3-8B', created: 1780012345, owned_by: 'vllm', context_length: 32768 }],
    ],
    [
      'llm/ollama/v1_models.json',
      [
        { id: 'qwen3:8b', created: 1780000100, owned_by: 'library' },
        { id: 'llama3.2:3b', created: 1779000200, owned_by: 'library' },
      ],
    ],
    [
      'llm/ollama/v1_models_hf_owner.json',
      [
        { id: 'mistral:7b', created: 1778000300, owned_by: 'library' },
        { id: 'hf.co/bartowski/Qwen2.5-Coder-7B-Instruct-GGUF:Q4_K_M', created: 1777000400, owned_by: 'bartowski' },
      ],
    ],
  ];
  for (const [file, expected] of cases) {
    const body = readFixtureJson(file);
    assert.deepEqual(parseModelList(body, BOTH), expected, `${file} with both filters`);
    assert.deepEqual(parseModelList(body, ALL), expected, `${file} unfiltered`);
  }
});

test('Ollama /api/tags and /api/ps ({models: [...]}) name the model in `model`', () => {
  assert.deepEqual(ids(readFixtureJson('llm/ollama/api_tags_docs.json'), BOTH), [
    'deepseek-r1:latest',
    'llama3.2:latest',
  ]);
  assert.deepEqual(parseModelList(readFixtureJson('llm/ollama/api_ps.json'), ALL), [
    { id: 'qwen3:8b', context_length: 8192 },
  ]);
});

test('a malformed body throws an Error that says what is wrong', () => {
  assert.throws(() => parseModelList('<html>login</html>', ALL), /must be a JSON object or array, got string/);
  assert.throws(() => parseModelList(null, ALL), /got null/);
  assert.throws(() => parseModelList({ error: { message: 'unauthorized' } }, ALL), /no "data" array \(keys: error\)/);
  assert.throws(() => parseModelList({ data: {} }, ALL), /no "data" array/);
  assert.throws(() => parseModelList({ data: [{ id: 'ok' }, 'x'] }, ALL), /entry #1 is not an object/);
  assert.throws(() => parseModelList({ data: [{ object: 'model' }] }, ALL), /entry #0 has no string "id"/);
});

test('duplicate ids are listed once; an empty list is fine', () => {
  assert.deepEqual(ids({ data: [{ id: 'a' }, { id: 'a', created: 5 }, { id: 'b' }] }, ALL), ['a', 'b']);
  assert.deepEqual(parseModelList({ object: 'list', data: [] }, BOTH), []);
});
