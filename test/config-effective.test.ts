import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeEffectiveConfig, STORE_SETTING_KEYS } from '../src/config/effective.ts';
import { parseConfigText } from '../src/config/load.ts';
import type { BackendSpec, GatewayConfig } from '../src/config/types.ts';

function fileConfig(): GatewayConfig {
  const result = parseConfigText(
    `
api_key: file-key
store_dir: /data/store
jobs_dir: /data/jobs
park_timeout_s: 60
backends:
  - name: gpu1
    url: http://10.0.0.5:8080
    api_key: file-secret
    max_concurrent: 1
    host: gpu1
  - name: ollama
    url: http://10.0.0.6:11434
virtual_models:
  fast: qwen3-8b
alias_park:
  fast: 10
`,
    {},
  );
  assert.ok(result.ok);
  return result.config;
}

const storeGpu1: BackendSpec = {
  name: 'gpu1',
  url: 'http://10.0.0.50:9000',
  type: 'openai',
  enabled: false,
  paid: false,
  local: true,
  chat_only: false,
  serverless_only: false,
};
const storeCloud: BackendSpec = {
  ...storeGpu1,
  name: 'cloud',
  url: 'https://api.example.com',
  paid: true,
  enabled: true,
};

test('with an empty store the effective config is the file config', () => {
  const file = fileConfig();
  assert.deepEqual(computeEffectiveConfig(file, { settings: {}, backends: [] }), file);
});

test('a store backend replaces the same-named file backend entirely; store-only ones are added', () => {
  const effective = computeEffectiveConfig(fileConfig(), { settings: {}, backends: [storeCloud, storeGpu1] });
  assert.deepEqual(
    effective.backends.map((b) => b.name),
    ['gpu1', 'ollama', 'cloud'],
  );
  assert.deepEqual(effective.backends[0], storeGpu1, 'no field (api_key, max_concurrent, host) leaks from the file');
  assert.equal(effective.backends[1].url, 'http://10.0.0.6:11434');
});

test('store settings override top-level keys, whole values; store_dir/jobs_dir never come from the store', () => {
  const effective = computeEffectiveConfig(fileConfig(), {
    settings: {
      api_key: 'store-key',
      park_timeout_s: 5,
      virtual_models: { big: { ollama: 'llama3:70b' } },
      alias_park: { big: 300 },
      store_dir: '/elsewhere',
      jobs_dir: '/elsewhere',
      backends: [storeCloud],
      not_a_config_key: 1,
      log_level: null,
    },
    backends: [],
  });
  assert.equal(effective.api_key, 'store-key');
  assert.equal(effective.park_timeout_s, 5);
  assert.deepEqual(
    effective.virtual_models,
    { big: { ollama: 'llama3:70b' } },
    'the stored alias table replaces the file one',
  );
  assert.deepEqual(effective.alias_park, { big: 300 });
  assert.equal(effective.store_dir, '/data/store');
  assert.equal(effective.jobs_dir, '/data/jobs');
  assert.deepEqual(
    effective.backends.map((b) => b.name),
    ['gpu1', 'ollama'],
    'backends come only from the backends table',
  );
  assert.equal(effective.log_level, 'info', 'a null setting is ignored');
  assert.ok(!('not_a_config_key' in effective));
  assert.ok(!STORE_SETTING_KEYS.includes('store_dir') && STORE_SETTING_KEYS.includes('max_parked'));
});

test('computing the effective config mutates neither input', () => {
  const file = fileConfig();
  const snapshot = structuredClone(file);
  const store = { settings: { park_timeout_s: 1 }, backends: [storeGpu1] };
  const storeSnapshot = structuredClone(store);
  computeEffectiveConfig(file, store);
  assert.deepEqual(file, snapshot);
  assert.deepEqual(store, storeSnapshot);
});
