/**
 * Generation aliases and the media knobs in config.yaml: workflow files read relative to the
 * config file's folder (real files in a temp dir; a real fixture workflow by absolute path),
 * every problem at its key path, the comfyui-only backend knobs and their resolved defaults,
 * GPU groups, and `image_models` as a store setting (store wins; stored values carry the
 * workflow itself).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { COMFY_DEFAULTS, comfyKnobs, DEFAULTS, gpuGroupSettings } from '../src/config/defaults.ts';
import { computeEffectiveConfig, STORE_SETTING_KEYS } from '../src/config/effective.ts';
import { loadConfigFile, parseConfigText } from '../src/config/load.ts';
import { createConfigValidator, formatProblems, type ConfigProblem } from '../src/config/schema.ts';
import { validateSetting } from '../src/config/settings-validate.ts';
import type { BackendSpec, GatewayConfig } from '../src/config/types.ts';
import { fixturePath } from './helpers/fixtures.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const tempDir = tempDirs('llmgw-image-models-');

const BACKENDS = `
backends:
  - name: comfy-a
    url: http://10.0.0.5:8188
    type: comfyui
  - name: comfy-b
    url: http://10.0.0.6:8188
    type: comfyui
  - name: llm
    url: http://10.0.0.7:8080
`;

/** A tiny API-format workflow: a prompt, a sampler and an output. */
const TINY = {
  '3': { class_type: 'KSampler', inputs: { seed: 1, steps: 20, model: ['4', 0] } },
  '4': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd15.safetensors' } },
  '6': { class_type: 'CLIPTextEncode', inputs: { text: 'a cat', clip: ['4', 1] } },
  '9': { class_type: 'SaveImage', inputs: { images: ['3', 0], filename_prefix: 'out' } },
};

/** Writes config.yaml (and `files`, relative to its folder) into a fresh temp dir; returns its path. */
function writeConfig(yaml: string, files: Record<string, string> = {}): string {
  const dir = tempDir();
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  const path = join(dir, 'config.yaml');
  writeFileSync(path, yaml);
  return path;
}

function problemsOf(result: ReturnType<typeof loadConfigFile>): Map<string, string> {
  assert.equal(result.ok, false, 'the config should be refused');
  return new Map((result.ok ? [] : result.problems).map((p: ConfigProblem) => [p.path, p.message]));
}

function ok(result: ReturnType<typeof loadConfigFile>): GatewayConfig {
  assert.ok(result.ok, result.ok ? '' : formatProblems(result.problems));
  return result.config;
}

describe('image_models in config.yaml', () => {
  test('a workflow file is read relative to config.yaml into workflow_json; workflow stays as its source', () => {
    const path = writeConfig(
      `${BACKENDS}
image_models:
  tiny:
    - backend: comfy-a
      workflow: workflows/tiny_api.json
      mapping:
        prompt: {node: 6, field: text}
      bypass: [4]
      output: 9
    - backend: comfy-b
      workflow: ./workflows/tiny_api.json
      fixed: [{node: "4", field: ckpt_name, value: other.safetensors}]
`,
      { 'workflows/tiny_api.json': JSON.stringify(TINY) },
    );
    const config = ok(loadConfigFile(path, {}));
    const [a, b] = config.image_models.tiny;
    assert.deepEqual(a.workflow_json, TINY);
    assert.equal(a.workflow, 'workflows/tiny_api.json', 'the source is kept for the console');
    assert.deepEqual(b.workflow_json, TINY);
    assert.deepEqual(a.mapping, { prompt: { node: '6', field: 'text' } }, 'unquoted node ids become strings');
    assert.deepEqual(a.bypass, ['4']);
    assert.equal(a.output, '9');
    assert.deepEqual(b.fixed, [{ node: '4', field: 'ckpt_name', value: 'other.safetensors' }]);
  });

  test('a real fixture workflow by absolute path', () => {
    const file = fixturePath('comfyui/workflows/txt2img_sd15_api.json');
    const path = writeConfig(`${BACKENDS}
image_models:
  sd15:
    - backend: comfy-a
      workflow: ${JSON.stringify(file)}
`);
    const config = ok(loadConfigFile(path, {}));
    assert.deepEqual(config.image_models.sd15[0].workflow_json, JSON.parse(readFileSync(file, 'utf8')));
  });

  test('an unreadable, non-JSON, UI-format or malformed workflow file is a problem naming the resolved path', () => {
    const dir = tempDir();
    const ui = {
      last_node_id: 9,
      nodes: [{ id: 3, type: 'KSampler' }],
      links: [[1, 4, 0, 3, 0, 'MODEL']],
      version: 0.4,
    };
    const files: Record<string, string> = {
      'wf/broken.json': '{"3": {"class_type": ',
      'wf/ui.json': JSON.stringify(ui),
      'wf/list.json': '[1, 2]',
      'wf/nodeless.json': JSON.stringify({ '3': { inputs: {} } }),
    };
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(join(dir, 'wf'), { recursive: true });
      writeFileSync(join(dir, rel), text);
    }
    const path = join(dir, 'config.yaml');
    writeFileSync(
      path,
      `${BACKENDS}
image_models:
  missing: [{backend: comfy-a, workflow: wf/nope.json}]
  broken: [{backend: comfy-a, workflow: wf/broken.json}]
  ui: [{backend: comfy-a, workflow: wf/ui.json}]
  list: [{backend: comfy-a, workflow: wf/list.json}]
  nodeless: [{backend: comfy-a, workflow: wf/nodeless.json}]
`,
    );
    const problems = problemsOf(loadConfigFile(path, {}));
    assert.match(
      problems.get('image_models.missing[0].workflow') ?? '',
      new RegExp(`cannot read ${join(dir, 'wf', 'nope.json')}: no such file`),
    );
    assert.match(
      problems.get('image_models.broken[0].workflow') ?? '',
      new RegExp(`${join(dir, 'wf', 'broken.json')} is not JSON`),
    );
    assert.match(
      problems.get('image_models.ui[0].workflow') ?? '',
      /ComfyUI's UI format; export it with 'Export \(API\)'/,
    );
    assert.match(problems.get('image_models.ui[0].workflow') ?? '', new RegExp(join(dir, 'wf', 'ui.json')));
    assert.match(problems.get('image_models.list[0].workflow') ?? '', /API-format workflow/);
    assert.match(problems.get('image_models.nodeless[0].workflow') ?? '', /node "3" is not \{class_type, inputs\}/);
    assert.equal(problems.size, 5);
  });

  test('schema and cross-checks, each at its key path', () => {
    const result = parseConfigText(
      `${BACKENDS}
image_models:
  both: [{backend: comfy-a, workflow: a.json, workflow_json: ${JSON.stringify(TINY)}}]
  neither: [{backend: comfy-a}]
  unknown: [{backend: nowhere, workflow_json: ${JSON.stringify(TINY)}}]
  llm: [{backend: llm, workflow_json: ${JSON.stringify(TINY)}}]
  twice:
    - {backend: comfy-a, workflow_json: ${JSON.stringify(TINY)}}
    - {backend: comfy-a, workflow_json: ${JSON.stringify(TINY)}}
  "has space": [{backend: comfy-a, workflow_json: ${JSON.stringify(TINY)}}]
  typo: [{backend: comfy-a, workflow_json: ${JSON.stringify(TINY)}, mapings: {}}]
  slot: [{backend: comfy-a, workflow_json: ${JSON.stringify(TINY)}, mapping: {image: {node: "6", field: text, on_empty: maybe}}}]
  ui: [{backend: comfy-a, workflow_json: {nodes: [], links: []}}]
  empty: []
`,
      {},
    );
    const problems = problemsOf(result);
    const expected: Record<string, RegExp> = {
      'image_models.both[0]': /either workflow .* or workflow_json, not both/,
      'image_models.neither[0]': /needs a workflow/,
      'image_models.unknown[0].backend':
        /names no backend in backends\[\] \(known comfyui backends: comfy-a, comfy-b\)/,
      'image_models.llm[0].backend': /type openai; generation aliases run on comfyui backends/,
      'image_models.twice[1].backend':
        /already has an entry in this alias \(image_models\.twice\[0\]\); one entry per backend/,
      'image_models["has space"]': /no whitespace/,
      'image_models.typo[0].mapings': /unknown key \(did you mean "mapping"\?\)/,
      'image_models.slot[0].mapping.image.on_empty': /placeholder, required, disable/,
      'image_models.ui[0].workflow_json': /UI format/,
      'image_models.empty': /must be a non-empty list of candidates/,
    };
    for (const [path, pattern] of Object.entries(expected)) assert.match(problems.get(path) ?? '(none)', pattern, path);
  });

  test('without a folder (parseConfigText alone) a workflow file stays unread', () => {
    const config = ok(parseConfigText(`${BACKENDS}\nimage_models:\n  x: [{backend: comfy-a, workflow: w.json}]\n`, {}));
    assert.equal(config.image_models.x[0].workflow_json, undefined);
  });
});

describe('media knobs', () => {
  test('defaults of the top-level keys', () => {
    const config = ok(parseConfigText('', {}));
    assert.deepEqual(config.image_models, {});
    assert.equal(config.media_park_timeout_s, 600);
    assert.equal(config.job_ttl_h, 24);
    assert.equal(config.ref_url_allow_private, true);
    assert.deepEqual(config.gpu_groups, {});
    for (const key of [
      'image_models',
      'media_park_timeout_s',
      'job_ttl_h',
      'ref_url_allow_private',
      'gpu_groups',
    ] as const) {
      assert.ok(key in DEFAULTS, `${key} has a default in DEFAULTS`);
    }
  });

  test("comfyui-only knobs are refused on other backends; gpu_group is any backend's", () => {
    const problems = problemsOf(
      parseConfigText(
        `
backends:
  - {name: llm, url: http://10.0.0.7:8080, gpu_group: box1, poll_interval: 2, max_wait: 5, read_timeout: 5, disconnect_grace: 1, auto_restart: true, restart_cooldown_s: 5}
  - {name: comfy, url: http://10.0.0.5:8188, type: comfyui, poll_interval: 0, disconnect_grace: -1, max_wait: 0}
gpu_groups:
  box1: {max_concurrent: 0}
  box2: {unload_llms: true}
`,
        {},
      ),
    );
    for (const key of [
      'poll_interval',
      'max_wait',
      'read_timeout',
      'disconnect_grace',
      'auto_restart',
      'restart_cooldown_s',
    ]) {
      assert.match(problems.get(`backends[0].${key}`) ?? '', /only backends of type comfyui/, key);
    }
    assert.ok(!problems.has('backends[0].gpu_group'));
    assert.ok(
      problems.has('backends[1].poll_interval') &&
        problems.has('backends[1].max_wait') &&
        problems.has('backends[1].disconnect_grace'),
    );
    assert.ok(problems.has('gpu_groups.box1.max_concurrent'));
    assert.match(problems.get('gpu_groups.box2.unload_llms') ?? '', /did you mean "unload_llm"/);
  });

  test('gpu groups get their defaults; a name no entry describes is an implicit group of 1', () => {
    const config = ok(
      parseConfigText(
        `
backends:
  - {name: swap, url: http://10.0.0.7:9292, gpu_group: box1}
  - {name: comfy, url: http://10.0.0.7:8188, type: comfyui, gpu_group: box1}
  - {name: other, url: http://10.0.0.8:8188, type: comfyui, gpu_group: nowhere}
gpu_groups:
  box1: {max_concurrent: 2, unload_llm: true}
`,
        {},
      ),
    );
    assert.deepEqual(config.gpu_groups.box1, { max_concurrent: 2, unload_llm: true, free_media: false });
    assert.deepEqual(gpuGroupSettings(config, 'box1'), { max_concurrent: 2, unload_llm: true, free_media: false });
    assert.deepEqual(gpuGroupSettings(config, 'nowhere'), { max_concurrent: 1, unload_llm: false, free_media: false });
  });

  test('comfyKnobs resolves every comfyui knob in milliseconds, defaults filled in', () => {
    const config = ok(
      parseConfigText(
        `
backends:
  - {name: plain, url: http://10.0.0.5:8188, type: comfyui}
  - {name: tuned, url: http://10.0.0.6:8188, type: comfyui, poll_interval: 0.25, max_wait: 900, read_timeout: 10, disconnect_grace: 0, auto_restart: true, restart_cooldown_s: 60, stuck_after_s: 30}
`,
        {},
      ),
    );
    const [plain, tuned] = config.backends;
    assert.deepEqual(comfyKnobs(plain), {
      pollMs: COMFY_DEFAULTS.poll_interval * 1000,
      maxWaitMs: 600_000,
      readTimeoutMs: 60_000,
      disconnectGraceMs: 30_000,
      autoRestart: false,
      restartCooldownMs: 600_000,
      stuckAfterMs: 90_000,
    });
    assert.deepEqual(comfyKnobs(tuned), {
      pollMs: 250,
      maxWaitMs: 900_000,
      readTimeoutMs: 10_000,
      disconnectGraceMs: 0,
      autoRestart: true,
      restartCooldownMs: 60_000,
      stuckAfterMs: 30_000,
    });
  });
});

describe('image_models in the store', () => {
  const validator = createConfigValidator();
  const comfyA: BackendSpec = {
    name: 'comfy-a',
    url: 'http://10.0.0.5:8188',
    type: 'comfyui',
    enabled: true,
    paid: false,
    local: false,
    chat_only: false,
    serverless_only: false,
  };
  const storeOnly: BackendSpec = { ...comfyA, name: 'comfy-store', url: 'http://10.0.0.9:8188' };

  test("is a store setting, and a stored value replaces the file's as a whole", () => {
    assert.ok(STORE_SETTING_KEYS.includes('image_models'));
    assert.ok(STORE_SETTING_KEYS.includes('gpu_groups'));
    const file = ok(
      parseConfigText(
        `${BACKENDS}\nimage_models:\n  a: [{backend: comfy-a, workflow_json: ${JSON.stringify(TINY)}}]\n`,
        {},
      ),
    );
    const stored = { b: [{ backend: 'comfy-store', workflow_json: TINY }] };
    const effective = computeEffectiveConfig(file, { settings: { image_models: stored }, backends: [storeOnly] });
    assert.deepEqual(effective.image_models, stored);
  });

  test("a stored value is validated like the file's, against the backends the gateway runs on", () => {
    const good = validateSetting(
      validator,
      'image_models',
      {
        x: [
          {
            backend: 'comfy-store',
            workflow: 'from/the/file.json',
            workflow_json: TINY,
            mapping: { prompt: { node: 6, field: 'text' } },
          },
        ],
      },
      [comfyA, storeOnly],
    );
    assert.ok(good.ok, good.ok ? '' : formatProblems(good.problems));
    assert.deepEqual((good.value as GatewayConfig['image_models']).x[0].mapping, {
      prompt: { node: '6', field: 'text' },
    });

    const bad = validateSetting(
      validator,
      'image_models',
      {
        path: [{ backend: 'comfy-a', workflow: 'workflows/sd15.json' }],
        none: [{ backend: 'comfy-a' }],
        gone: [{ backend: 'nowhere', workflow_json: TINY }],
        ui: [{ backend: 'comfy-a', workflow_json: { nodes: [], links: [] } }],
      },
      [comfyA, storeOnly],
    );
    assert.equal(bad.ok, false);
    const problems = new Map((bad.ok ? [] : bad.problems).map((p) => [p.path, p.message]));
    assert.match(problems.get('image_models.path[0].workflow') ?? '', /cannot name a workflow file.*workflow_json/);
    assert.match(problems.get('image_models.none[0].workflow_json') ?? '', /is required/);
    assert.match(problems.get('image_models.gone[0].backend') ?? '', /known comfyui backends: comfy-a, comfy-store/);
    assert.match(problems.get('image_models.ui[0].workflow_json') ?? '', /UI format/);
    assert.ok(
      [...problems.keys()].every((p) => p.startsWith('image_models.')),
      "only the setting's own problems",
    );
  });

  test('other settings go through the same schema; keys the store may not hold are refused', () => {
    const groups = validateSetting(validator, 'gpu_groups', { box1: { max_concurrent: 2 } }, []);
    assert.deepEqual(groups, {
      ok: true,
      value: { box1: { max_concurrent: 2, unload_llm: false, free_media: false } },
    });
    const bad = validateSetting(validator, 'job_ttl_h', 0, []);
    assert.ok(!bad.ok && bad.problems[0].path === 'job_ttl_h');
    const notStorable = validateSetting(validator, 'store_dir', '/elsewhere', []);
    assert.ok(!notStorable.ok && /not a setting the store may hold/.test(notStorable.problems[0].message));
  });
});
