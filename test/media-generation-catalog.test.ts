/**
 * The generation catalog over real fixture workflows and the base-install /object_info dump: ordered
 * candidates with the alias's one mapping (the first entry's), entries that cannot run left
 * out and reported, validation per backend's object_info, the LoRA union and LoRA routing,
 * and a table built once per configuration object.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { embeddedDefaultConfig } from '../src/config/defaults.ts';
import type { BackendSpec, GatewayConfig, ImageModelEntry } from '../src/config/types.ts';
import type { ObjectInfo } from '../src/media/compiler/index.ts';
import { GenerationCatalog } from '../src/media/generation-catalog.ts';
import { inventoryOf } from '../src/media/compiler/inventory.ts';
import { objectInfo, workflow } from './helpers/comfy-workflows.ts';

const backend = (name: string, type: BackendSpec['type'] = 'comfyui'): BackendSpec => ({
  name,
  url: `http://${name}.lan:8188`,
  type,
  enabled: true,
  paid: false,
  local: false,
  chat_only: false,
  serverless_only: false,
});

function configWith(imageModels: Record<string, ImageModelEntry[]>): GatewayConfig {
  return {
    ...embeddedDefaultConfig(),
    backends: [backend('comfy-a'), backend('comfy-b'), backend('comfy-c'), backend('llm', 'openai')],
    image_models: imageModels,
  };
}

/** A catalog over `config` (swappable), comfy-a with the base-install object_info, the others unknown unless given. */
function catalogOf(
  start: GatewayConfig,
  opts: { infos?: Record<string, ObjectInfo>; loras?: Record<string, string[]> } = {},
) {
  let config = start;
  const infos: Record<string, ObjectInfo> = opts.infos ?? { 'comfy-a': objectInfo() };
  const catalog = new GenerationCatalog({
    config: () => config,
    objectInfo: (name) => infos[name],
    loras: (name) => opts.loras?.[name],
  });
  return {
    catalog,
    infos,
    setConfig: (c: GatewayConfig) => {
      config = c;
    },
  };
}

describe('the generation catalog', () => {
  const sd15 = () => workflow('txt2img_sd15_api.json');
  const audio = () => workflow('stable_audio_open_api.json');
  const mapping = { prompt: { node: '61', field: 'value' }, seed: { node: 'input_seed', field: 'value' } };

  test("candidates in order, each with its own pins and the first entry's mapping", () => {
    const { catalog } = catalogOf(
      configWith({
        sd15: [
          {
            backend: 'comfy-b',
            workflow_json: sd15(),
            mapping,
            fixed: [{ node: '312', field: 'ckpt_name', value: 'b.safetensors' }],
          },
          {
            backend: 'comfy-a',
            workflow_json: sd15(),
            fixed: [{ node: '312', field: 'ckpt_name', value: 'v1-5-pruned-emaonly.safetensors' }],
            bypass: ['313'],
            output: '10',
          },
        ],
        audio: [{ backend: 'comfy-a', workflow: 'workflows/stable_audio_open_api.json', workflow_json: audio() }],
      }),
    );
    assert.deepEqual(catalog.names(), ['sd15', 'audio']);
    const model = catalog.get('sd15')!;
    assert.deepEqual(
      model.candidates.map((c) => c.backend),
      ['comfy-b', 'comfy-a'],
    );
    assert.equal(model.candidates[1].alias.mapping, mapping, "the mapping is the first entry's, shared");
    assert.deepEqual(model.candidates[1].alias.fixed, [
      { node: '312', field: 'ckpt_name', value: 'v1-5-pruned-emaonly.safetensors' },
    ]);
    assert.deepEqual(model.candidates[1].alias.bypass, ['313']);
    assert.equal(model.candidates[1].alias.output, '10');
    assert.equal(model.candidates[1].alias.workflow['310'].class_type, 'KSampler');
    assert.ok(
      !('mapping' in catalog.get('audio')!.candidates[0].alias),
      'no mapping given: none set (the compiler suggests one)',
    );
    assert.equal(catalog.get('nope'), undefined);
  });

  test('entries that cannot run are left out and reported; an alias with none left is not listed', () => {
    const { catalog } = catalogOf(
      configWith({
        mixed: [
          { backend: 'llm', workflow_json: audio(), mapping },
          { backend: 'ghost', workflow_json: audio() },
          { backend: 'comfy-a', workflow_json: audio(), mapping: { prompt: { node: '6', field: 'text' } } },
          { backend: 'comfy-a', workflow_json: audio() },
          { backend: 'comfy-b', workflow: 'workflows/stable_audio_open_api.json' },
          { backend: 'comfy-c', workflow_json: { nodes: [], links: [] } as never },
        ],
        dead: [{ backend: 'ghost', workflow_json: audio() }],
      }),
    );
    assert.deepEqual(catalog.names(), ['mixed']);
    assert.equal(catalog.get('dead'), undefined);
    assert.deepEqual(
      catalog.get('mixed')!.candidates.map((c) => c.backend),
      ['comfy-a'],
    );
    assert.equal(
      catalog.get('mixed')!.candidates[0].alias.mapping,
      mapping,
      "the first entry's mapping even though that entry cannot run",
    );
    const byPath = new Map(catalog.problems().map((p) => [p.path, p]));
    const expect = (path: string, severity: string, message: RegExp) => {
      const p = byPath.get(path);
      assert.ok(p, `a problem at ${path}; got ${[...byPath.keys()].join(', ')}`);
      assert.equal(p.severity, severity, path);
      assert.match(p.message, message, path);
    };
    expect('image_models.mixed[0].backend', 'error', /type openai; generation aliases run on comfyui backends/);
    expect('image_models.mixed[1].backend', 'error', /names no configured backend/);
    expect(
      'image_models.mixed[2].mapping',
      'warning',
      /ignored: the first entry's mapping \(image_models\.mixed\[0\]\.mapping\) is shared/,
    );
    expect('image_models.mixed[3].backend', 'error', /one entry per backend/);
    expect('image_models.mixed[4].workflow', 'error', /was not read into workflow_json/);
    expect('image_models.mixed[5].workflow_json', 'error', /UI format/);
  });

  test("problems: validateAlias per candidate against its backend's object_info, at image_models key paths", () => {
    const { catalog } = catalogOf(
      configWith({
        sd15: [
          {
            backend: 'comfy-a',
            workflow_json: sd15(),
            mapping: { ...mapping, bad: { node: '61', field: 'valeu' }, linked: { node: '132', field: 'text' } },
          },
          { backend: 'comfy-b', workflow_json: sd15() },
        ],
        audio: [{ backend: 'comfy-a', workflow_json: audio(), mapping: { prompt: { node: '6', field: 'text' } } }],
      }),
    );
    const problems = catalog.problems();
    const at = (path: string) => problems.filter((p) => p.path === path);
    // the dump is a base install: the rgthree LoRA stack is not in it
    assert.match(
      at('image_models.sd15[0].workflow.313.class_type')[0]?.message ?? '',
      /Lora Loader Stack \(rgthree\) is not installed/,
    );
    assert.match(
      at('image_models.sd15[0].mapping.bad.field')[0]?.message ?? '',
      /PrimitiveStringMultiline has no input 'valeu'/,
    );
    assert.match(at('image_models.sd15[0].mapping.linked.field')[0]?.message ?? '', /linked from node 61/);
    // comfy-b's object_info is not known: only what the workflow alone shows; its mapping
    // problems point at the mapping's place (the first entry), naming comfy-b's workflow
    assert.equal(at('image_models.sd15[1].workflow.313.class_type').length, 0);
    assert.equal(problems.filter((p) => p.path.startsWith('image_models.sd15[1].mapping')).length, 0);
    const linked = at('image_models.sd15[0].mapping.linked.field').map((p) => p.message);
    assert.equal(linked.length, 2);
    assert.match(linked[1], /linked from node 61.*\(in the workflow of comfy-b, image_models\.sd15\[1\]\)/);
    assert.deepEqual(
      problems.filter((p) => p.path.startsWith('image_models.audio') && p.severity === 'error'),
      [],
      'a clean alias has no errors',
    );
  });

  test('the table is built once per configuration object; validation once per object_info', () => {
    const first = configWith({ sd15: [{ backend: 'comfy-a', workflow_json: sd15(), mapping }] });
    const { catalog, infos, setConfig } = catalogOf(first);
    const model = catalog.get('sd15');
    assert.equal(catalog.get('sd15'), model, 'no rebuild between calls');
    const p1 = catalog.problems();
    const p2 = catalog.problems();
    assert.ok(p1.length > 0 && p1.every((p, i) => p === p2[i]), 'validation results are reused');
    infos['comfy-a'] = structuredClone(objectInfo()); // a fresh read of /object_info
    assert.ok(
      catalog.problems().every((p, i) => p !== p1[i] && p.path === p1[i].path),
      'revalidated against the new dump',
    );
    setConfig({ ...first, image_models: { other: [{ backend: 'comfy-b', workflow_json: audio() }] } });
    assert.deepEqual(catalog.names(), ['other']);
    assert.notEqual(catalog.get('other'), undefined);
  });

  test("LoRAs: the union across an alias's backends, and the candidates that have every LoRA asked for", () => {
    const entries = (names: string[]) => names.map((b) => ({ backend: b, workflow_json: sd15(), mapping }));
    const { catalog } = catalogOf(
      configWith({ sd15: entries(['comfy-a', 'comfy-b', 'comfy-c']), solo: entries(['comfy-c']) }),
      {
        loras: {
          'comfy-a': ['detail.safetensors', 'style/ink.safetensors'],
          'comfy-b': ['style/ink.safetensors', 'anime.safetensors'],
        },
      },
    );
    assert.deepEqual(catalog.loras('sd15'), ['anime.safetensors', 'detail.safetensors', 'style/ink.safetensors']);
    assert.deepEqual(catalog.loras('solo'), [], 'an inventory not known yet lists none');
    assert.equal(catalog.loras('nope'), undefined);

    const names = (r: ReturnType<typeof catalog.withLoras>) => r.candidates.map((c) => c.backend);
    assert.deepEqual(
      names(catalog.withLoras('sd15', [])),
      ['comfy-a', 'comfy-b', 'comfy-c'],
      'no LoRA asked: every candidate',
    );
    assert.deepEqual(names(catalog.withLoras('sd15', ['style/ink.safetensors'])), ['comfy-a', 'comfy-b']);
    const one = catalog.withLoras('sd15', ['anime.safetensors', 'style/ink.safetensors']);
    assert.deepEqual(one, { candidates: [catalog.get('sd15')!.candidates[1]], missingEverywhere: [] });
    const split = catalog.withLoras('sd15', ['anime.safetensors', 'detail.safetensors']);
    assert.deepEqual(
      split,
      { candidates: [], missingEverywhere: [] },
      'each is installed somewhere, just not together',
    );
    assert.deepEqual(catalog.withLoras('sd15', ['ghost.safetensors', 'detail.safetensors']).missingEverywhere, [
      'ghost.safetensors',
    ]);
    assert.deepEqual(
      catalog.withLoras('solo', ['detail.safetensors']),
      { candidates: [], missingEverywhere: ['detail.safetensors'] },
      'unknown inventory counts as lacking',
    );
  });

  test('LoRAs read from the base-install dump (it has none)', () => {
    const { catalog } = catalogOf(configWith({ sd15: [{ backend: 'comfy-a', workflow_json: sd15() }] }), {
      loras: { 'comfy-a': inventoryOf(objectInfo()).loras },
    });
    assert.deepEqual(catalog.loras('sd15'), []);
    assert.deepEqual(catalog.withLoras('sd15', ['x.safetensors']).missingEverywhere, ['x.safetensors']);
  });
});
