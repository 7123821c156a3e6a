import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectInfo, workflow } from './helpers/comfy-workflows.ts';
import { outputKind, validateAlias, type Problem } from '../src/media/compiler/index.ts';

const byPath = (problems: Problem[]) => Object.fromEntries(problems.map((p) => [p.path, p.severity]));

test('a sound alias on a server that has every class: no problems', () => {
  assert.deepEqual(
    validateAlias(
      { workflow: workflow('stable_audio_open_api.json'), fixed: [{ node: '3', field: 'steps', value: 40 }] },
      objectInfo(),
      'audio_models.sao[0]',
    ),
    [],
  );
});

test('every kind of mistake, each at its key path, against the base-install object_info', () => {
  const P = 'image_models.sd15[0]';
  const problems = validateAlias(
    {
      workflow: workflow('txt2img_sd15_api.json'),
      mapping: {
        seed: { node: '999', field: 'seed' }, // unknown node
        steps: { node: '310', field: 'stepz' }, // not an input of KSampler
        prompt: { node: '132', field: 'text' }, // linked from the primitive 61
        negative_prompt: { node: '63', field: 'value', on_empty: 'disable' }, // on_empty on a non-image
        size: { node: '146', field: 'value' }, // reserved name
        cfg: { node: '310', field: 'cfg' }, // pinned below: can never be set
      },
      fixed: [
        { node: '310', field: 'cfg', value: 'high' }, // not a FLOAT
        { node: '310', field: 'sampler_name', value: 'nope' }, // not in the combo
      ],
      bypass: ['nope'],
      output: '311', // EmptyLatentImage is no output node
    },
    objectInfo(),
    P,
  );
  assert.deepEqual(byPath(problems), {
    [`${P}.workflow.313.class_type`]: 'error', // rgthree is not installed on that server
    [`${P}.fixed[0].value`]: 'error',
    [`${P}.fixed[1].value`]: 'error',
    [`${P}.mapping.seed.node`]: 'error',
    [`${P}.mapping.steps.field`]: 'error',
    [`${P}.mapping.prompt.field`]: 'error',
    [`${P}.mapping.negative_prompt.on_empty`]: 'error',
    [`${P}.mapping.size`]: 'error',
    [`${P}.mapping.cfg`]: 'warning',
    [`${P}.bypass[0]`]: 'error',
    [`${P}.output`]: 'error',
  });
  assert.match(problems.find((p) => p.path.endsWith('prompt.field'))!.message, /linked from node 61/);
  assert.match(problems.find((p) => p.path.endsWith('fixed[1].value'))!.message, /must be one of: euler/);
});

test('unknown classes: reported per node with object_info; fields unchecked; titles must be unique', () => {
  const problems = validateAlias(
    {
      workflow: workflow('img2mesh-trellis2_high_api.json'),
      mapping: {
        image: { node: 'input_image', field: 'image', on_empty: 'disable' },
        suffix: { node: 'Concatenate Text', field: 'string_b' },
      },
    },
    objectInfo(),
    'mesh_models.trellis',
  );
  const classes = problems.filter((p) => p.path.endsWith('.class_type'));
  assert.equal(classes.length, 20);
  assert.ok(
    classes.some(
      (p) =>
        p.path === 'mesh_models.trellis.workflow.58.class_type' && /Trellis2LoadImageWithTransparency/.test(p.message),
    ),
  );
  const rest = problems.filter((p) => !p.path.endsWith('.class_type'));
  assert.deepEqual(
    rest.map((p) => [p.path, p.severity]),
    [['mesh_models.trellis.mapping.suffix.node', 'error']],
  );
  assert.match(rest[0].message, /names 4 nodes/);
});

test('without object_info: only the graph itself is checked; an unseen field is a warning', () => {
  const problems = validateAlias(
    { workflow: workflow('img2mesh-trellis2_high_api.json'), mapping: { image: { node: '58', field: 'imagez' } } },
    undefined,
    'm',
  );
  assert.deepEqual(byPath(problems), { 'm.mapping.image.field': 'warning' });
});

test('a workflow without an output node, and a dangling link, are errors', () => {
  const problems = validateAlias(
    { workflow: { '1': { class_type: 'KSampler', inputs: { model: ['9', 0] } } } },
    undefined,
    'x',
  );
  assert.deepEqual(byPath(problems), { 'x.workflow.1.inputs.model': 'error', 'x.workflow': 'error' });
});

test('outputKind per class', () => {
  assert.equal(outputKind('SaveImage'), 'image');
  assert.equal(outputKind('PreviewImage'), 'image');
  assert.equal(outputKind('SaveVideo'), 'video');
  assert.equal(outputKind('VHS_VideoCombine'), 'video');
  assert.equal(outputKind('SaveAudio'), 'audio');
  assert.equal(outputKind('SaveGLB'), 'mesh');
  assert.equal(outputKind('Trellis2ExportMesh'), 'mesh');
  assert.equal(outputKind('PreviewAny'), 'other');
});
