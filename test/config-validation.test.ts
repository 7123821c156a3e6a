import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DEFAULTS, embeddedDefaultConfig, howToWriteConfigHint } from '../src/config/defaults.ts';
import { loadBootConfig, loadConfigFile, parseConfigText } from '../src/config/load.ts';
import {
  configSchema,
  createConfigValidator,
  formatProblems,
  TOP_LEVEL_KEYS,
  validateConfig,
} from '../src/config/schema.ts';
import { parse } from 'yaml';

const exampleFile = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'config.example.yaml');

const BROKEN = `
apikey: secret
max_concurrent: "4"
log_level: loud
metrics_access: everyone
backends:
  - name: gpu1
    url: http://10.0.0.5:8080/v1
  - name: gpu1
    url: http://10.0.0.6:8080/v1/
    typ: openai
  - name: "has space"
    url: ftp://10.0.0.7
    max_concurrent: -1
    paid: "yes"
  - url: http://10.0.0.8:8080
virtual_models:
  fast:
    gpu1: qwen3-8b
    nope: qwen3-8b
  broken: 5
`;

test('every validation problem is reported together, each with its key path', () => {
  const result = parseConfigText(BROKEN, {});
  assert.equal(result.ok, false);
  const problems = result.ok ? [] : result.problems;
  const byPath = new Map(problems.map((p) => [p.path, p.message]));
  const expected: Record<string, RegExp> = {
    apikey: /unknown key.*api_key/, // unknown key, with a suggestion
    max_concurrent: /integer/, // wrong type
    log_level: /one of/, // bad enum
    metrics_access: /loopback, open, key/,
    'backends[0].url': /\/v1/, // trailing /v1
    'backends[1].url': /\/v1/, // trailing /v1/
    'backends[1].name': /duplicate.*gpu1/,
    'backends[1].typ': /unknown key/,
    'backends[2].name': /letters, digits/,
    'backends[2].url': /http/,
    'backends[2].max_concurrent': />= 0/,
    'backends[2].paid': /boolean/,
    'backends[3].name': /required/,
    'virtual_models.fast.nope': /no backend/,
    'virtual_models.broken': /model id/,
  };
  for (const [path, message] of Object.entries(expected)) {
    assert.ok(byPath.has(path), `missing a problem at ${path}; got:\n${formatProblems(problems)}`);
    assert.match(byPath.get(path)!, message, path);
  }
  assert.equal(problems.length, Object.keys(expected).length, formatProblems(problems));
});

test('formatProblems lists one problem per line with its path', () => {
  const text = formatProblems([
    { path: 'backends[2].url', message: 'must not end in /v1' },
    { path: '', message: 'cannot read config.yaml' },
  ]);
  assert.equal(text, '  - backends[2].url: must not end in /v1\n  - (top level): cannot read config.yaml');
});

test('YAML syntax errors are problems with a line number', () => {
  const result = parseConfigText('log_level: info\nbackends:\n  - name: a\n   url: [http://x\n', {});
  assert.equal(result.ok, false);
  assert.ok(!result.ok && result.problems.length > 0);
  assert.ok(
    !result.ok && result.problems.every((p) => /^line \d+/.test(p.path) && /YAML/.test(p.message)),
    JSON.stringify(result),
  );
  const dup = parseConfigText('log_level: info\nlog_level: warn\n', {});
  assert.ok(!dup.ok && dup.problems[0].path.startsWith('line 2'), 'a duplicate key is a syntax problem');
});

test('an empty file gives every default', () => {
  for (const text of ['', '# only a comment\n', '---\n']) {
    const result = parseConfigText(text, {});
    assert.ok(result.ok, text);
    assert.deepEqual(result.config, {
      ...DEFAULTS,
      backends: [],
      virtual_models: {},
      alias_park: {},
      alias_defaults: {},
      reasoning_rules: [],
    });
  }
});

test('backend defaults are filled; trailing slashes stripped; null-valued keys mean "not set"', () => {
  const result = parseConfigText(
    'virtual_models:\n  # none yet\nbackends:\n  - name: box\n    url: http://10.0.0.5:8080/\n    api_key:\n',
    {},
  );
  assert.ok(result.ok, JSON.stringify(result));
  assert.deepEqual(result.config.backends, [
    {
      name: 'box',
      url: 'http://10.0.0.5:8080',
      type: 'openai',
      enabled: true,
      paid: false,
      local: false,
      chat_only: false,
      serverless_only: false,
    },
  ]);
  assert.deepEqual(result.config.virtual_models, {});
});

test('default objects are fresh per validation (no shared mutable state)', () => {
  const a = validateConfig({});
  const b = validateConfig({});
  assert.ok(a.ok && b.ok);
  a.config.virtual_models.x = 'y';
  assert.deepEqual(b.config.virtual_models, {});
});

test('config.example.yaml is valid and documents every key', () => {
  const result = loadConfigFile(exampleFile, { OPENROUTER_API_KEY: 'sk-or-test' });
  assert.ok(result.ok, result.ok ? '' : formatProblems(result.problems));
  const openrouter = result.config.backends.find((b) => b.name === 'openrouter');
  assert.equal(openrouter?.api_key, 'sk-or-test');
  assert.ok(result.config.backends.some((b) => b.type === 'comfyui'));
  assert.equal(typeof result.config.virtual_models.coder, 'string');
  assert.equal(typeof result.config.virtual_models.fast, 'object');

  // Every top-level key appears, set to its documented default.
  const raw = parse(readFileSync(exampleFile, 'utf8')) as Record<string, unknown>;
  assert.deepEqual(Object.keys(raw).sort(), [...TOP_LEVEL_KEYS].sort());
  for (const [key, value] of Object.entries(DEFAULTS))
    assert.deepEqual(raw[key], value, `example ${key} should show its default`);
  // Every backend field is described in the comment table.
  const text = readFileSync(exampleFile, 'utf8');
  for (const field of Object.keys(configSchema.properties.backends.items.properties)) {
    assert.match(text, new RegExp(`^#   ${field} `, 'm'), `backend field ${field} is documented`);
  }

  const unset = loadConfigFile(exampleFile, {});
  assert.ok(!unset.ok && unset.problems.some((p) => /OPENROUTER_API_KEY/.test(p.message)));
});

test('a missing file is a problem for loadConfigFile and the embedded default for loadBootConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-config-'));
  try {
    const path = join(dir, 'config.yaml');
    const missing = loadConfigFile(path, {});
    assert.ok(!missing.ok && /cannot read/.test(missing.problems[0].message));
    const boot = loadBootConfig(path, {});
    assert.equal(boot.source, 'embedded');
    assert.ok(boot.result.ok && boot.result.config.backends.length === 5);
    writeFileSync(path, 'log_level: debug\n');
    const fromFile = loadBootConfig(path, {});
    assert.equal(fromFile.source, 'file');
    assert.ok(fromFile.result.ok && fromFile.result.config.log_level === 'debug');
    const named = loadBootConfig(join(dir, 'other.yaml'), {}, { explicit: true });
    assert.ok(
      !named.result.ok && /config file not found/.test(named.result.problems[0].message),
      'a named file that is missing is an error, not the default',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the embedded default probes the usual loopback ports and is itself valid', () => {
  const config = embeddedDefaultConfig();
  assert.deepEqual(
    config.backends.map((b) => [b.name, b.url, b.type]),
    [
      ['ollama', 'http://127.0.0.1:11434', 'openai'],
      ['llamacpp', 'http://127.0.0.1:8080', 'openai'],
      ['vllm', 'http://127.0.0.1:8000', 'openai'],
      ['lmstudio', 'http://127.0.0.1:1234', 'openai'],
      ['comfyui', 'http://127.0.0.1:8188', 'comfyui'],
    ],
  );
  assert.ok(config.backends.filter((b) => b.type === 'openai').every((b) => b.local));
  const revalidated = validateConfig(structuredClone(config));
  assert.ok(revalidated.ok, revalidated.ok ? '' : formatProblems(revalidated.problems));
  assert.deepEqual(revalidated.config, config);
  assert.notEqual(embeddedDefaultConfig().backends, config.backends, 'a fresh object each call');
  assert.match(howToWriteConfigHint, /config\.example\.yaml/);
});

test('one backend can be validated on its own (console edits), with defaults and relative paths', () => {
  const validator = createConfigValidator();
  const good = validator.validateBackend({ name: 'cloud', url: 'https://api.example.com/', paid: true });
  assert.ok(good.ok);
  assert.deepEqual(good.spec, {
    name: 'cloud',
    url: 'https://api.example.com',
    paid: true,
    type: 'openai',
    enabled: true,
    local: false,
    chat_only: false,
    serverless_only: false,
  });
  const bad = validator.validateBackend({ name: 'a b', url: 'http://h:1/v1', colour: 'red' });
  assert.ok(!bad.ok);
  assert.deepEqual(bad.problems.map((p) => p.path).sort(), ['colour', 'name', 'url']);
});

test('kind-specific backend options are refused on the other kinds, by key path', () => {
  const result = validateConfig({
    backends: [
      { name: 'a', url: 'http://127.0.0.1:1', auth_mode: 'api_key' },
      { name: 'b', url: 'http://127.0.0.1:2', type: 'anthropic', prompt_cache: true },
      { name: 'c', url: 'http://127.0.0.1:3', type: 'anthropic', auth_mode: 'subscription' },
      {
        name: 'd',
        url: 'http://127.0.0.1:4',
        type: 'anthropic',
        auth_mode: 'subscription',
        api_key: 'sk-ant-oat01-x',
        models: ['claude-x'],
      },
      { name: 'e', url: 'http://127.0.0.1:5', prompt_cache: true, models: ['m'] },
    ],
  });
  assert.equal(result.ok, false);
  const paths = result.ok ? [] : result.problems.map((p) => p.path);
  assert.deepEqual(paths.sort(), ['backends[0].auth_mode', 'backends[1].prompt_cache', 'backends[2].api_key']);
  const one = createConfigValidator().validateBackend({ name: 'x', url: 'http://127.0.0.1:1', models: 'claude-x' });
  assert.equal(one.ok, false);
  assert.deepEqual(one.ok ? [] : one.problems.map((p) => p.path), ['models']);
});

test('reasoning rules, alias defaults and sampling defaults are checked by key path', () => {
  const result = validateConfig({
    backends: [{ name: 'a', url: 'http://127.0.0.1:1', sampling_defaults: { temperature: 0.5, stream: true } }],
    alias_defaults: { fast: { reasoning: 'off', sampling_defaults: { model: 'x' } }, slow: { reasoning: 'sometimes' } },
    reasoning_rules: [
      { model: 'qwen3*', mechanism: 'enable_thinking' },
      { model: 'x', mechanism: 'magic' },
      { mechanism: 'none' },
    ],
  });
  assert.equal(result.ok, false);
  const paths = result.ok ? [] : [...new Set(result.problems.map((p) => p.path))].sort();
  assert.deepEqual(paths, [
    'alias_defaults.fast.sampling_defaults.model',
    'alias_defaults.slow.reasoning',
    'backends[0].sampling_defaults.stream',
    'reasoning_rules[1].mechanism',
    'reasoning_rules[2].model',
  ]);
});

test('comfyui knobs only on comfyui backends; a comfyui box runs one prompt at a time unless told', () => {
  const bad = validateConfig({
    backends: [
      { name: 'llm', url: 'http://127.0.0.1:1', stuck_after_s: 60 },
      { name: 'c', url: 'http://127.0.0.1:2', type: 'comfyui', stuck_after_s: 0 },
    ],
  });
  assert.equal(bad.ok, false);
  assert.deepEqual(bad.ok ? [] : bad.problems.map((p) => p.path).sort(), [
    'backends[0].stuck_after_s',
    'backends[1].stuck_after_s',
  ]);
  const good = validateConfig({
    backends: [{ name: 'c', url: 'http://127.0.0.1:2', type: 'comfyui', stuck_after_s: 120 }],
  });
  assert.ok(good.ok, JSON.stringify(good));
});
