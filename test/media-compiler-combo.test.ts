/**
 * The one reader of ComfyUI combo declarations (src/media/compiler/combo.ts), against the
 * base-install `/object_info` dump in test/fixtures (both spellings, numeric choices, a `COMBO`
 * with no options list), and the two readers built on it: input declarations and the inventory.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { comboChoices } from '../src/media/compiler/combo.ts';
import { inventoryOf } from '../src/media/compiler/inventory.ts';
import { inputDecls } from '../src/media/compiler/object-info.ts';
import type { ObjectInfo } from '../src/media/compiler/types.ts';
import { readFixtureJson } from './helpers/fixtures.ts';

const info = readFixtureJson<ObjectInfo>('comfyui/object_info.json');
const spec = (cls: string, group: 'required' | 'optional', input: string): unknown => info[cls].input![group]![input];

const CASES: { name: string; spec: unknown; choices: unknown[] | undefined }[] = [
  {
    name: 'the old list-as-type spelling: KSampler.scheduler',
    spec: spec('KSampler', 'required', 'scheduler'),
    choices: [
      'simple',
      'sgm_uniform',
      'karras',
      'exponential',
      'ddim_uniform',
      'beta',
      'normal',
      'linear_quadratic',
      'kl_optimal',
    ],
  },
  {
    name: 'the newer COMBO spelling: LatentConcat.dim',
    spec: spec('LatentConcat', 'required', 'dim'),
    choices: ['x', '-x', 'y', '-y', 't', '-t'],
  },
  {
    name: 'numeric choices stay numbers: MinimaxHailuoVideoNode.duration',
    spec: spec('MinimaxHailuoVideoNode', 'optional', 'duration'),
    choices: [6, 10],
  },
  {
    name: 'a COMBO without an options list: LoadImageOutput.image',
    spec: spec('LoadImageOutput', 'required', 'image'),
    choices: [],
  },
  { name: 'an INT widget is no combo', spec: spec('KSampler', 'required', 'steps'), choices: undefined },
  { name: 'a socket is no combo', spec: spec('KSampler', 'required', 'model'), choices: undefined },
  { name: 'COMBO without a config', spec: ['COMBO'], choices: [] },
  { name: 'COMBO with a null config', spec: ['COMBO', null], choices: [] },
  { name: 'COMBO with options that are no list', spec: ['COMBO', { options: 'a' }], choices: [] },
  { name: 'not a declaration', spec: { options: ['a'] }, choices: undefined },
];

for (const c of CASES) {
  test(`combo choices: ${c.name}`, () => assert.deepEqual(comboChoices(c.spec), c.choices));
}

test('combo choices: the legacy list is the declaration’s own list, not a copy', () => {
  const legacy = spec('KSampler', 'required', 'sampler_name') as unknown[];
  assert.equal(comboChoices(legacy), legacy[0]);
});

test('every input of the dump: a combo declaration exactly when comboChoices finds choices, and those', () => {
  let legacy = 0;
  let modern = 0;
  for (const [cls, node] of Object.entries(info)) {
    for (const decl of inputDecls(node)) {
      const raw = node.input![decl.required ? 'required' : 'optional']![decl.name];
      const choices = comboChoices(raw);
      assert.equal(decl.kind === 'COMBO', choices !== undefined, `${cls}.${decl.name}`);
      assert.deepEqual(decl.choices, choices, `${cls}.${decl.name}`);
      if (Array.isArray(raw[0])) legacy++;
      else if (choices) modern++;
    }
  }
  // both spellings are in a base install of that era
  assert.ok(legacy > 100 && modern > 200, `${legacy} legacy, ${modern} COMBO`);
});

test('the inventory takes the string choices of loader inputs, in either spelling', () => {
  const inv = inventoryOf({
    Old: { input: { required: { ckpt_name: [['a.safetensors', 7, 'None']] } } },
    New: { input: { required: { vae_name: ['COMBO', { options: ['v.safetensors', 8] }] } } },
  });
  assert.deepEqual(inv.checkpoints, ['a.safetensors']);
  assert.deepEqual(inv.vaes, ['v.safetensors']);
  const real = inventoryOf(info);
  assert.deepEqual(
    real.checkpoints,
    [...(comboChoices(spec('CheckpointLoaderSimple', 'required', 'ckpt_name')) ?? [])].sort(),
  );
});
