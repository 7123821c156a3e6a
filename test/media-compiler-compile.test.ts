import { test } from 'node:test';
import assert from 'node:assert/strict';
import { half, objectInfo, workflow } from './helpers/comfy-workflows.ts';
import {
  compile,
  PLACEHOLDER_IMAGE_NAME,
  type CompileResult,
  type GenerationAlias,
} from '../src/media/compiler/index.ts';

function ok(result: CompileResult) {
  assert.ok(result.ok, `expected ok, got ${JSON.stringify(!result.ok && result.error)}`);
  return result;
}
function refused(result: CompileResult) {
  assert.ok(!result.ok, 'expected a refusal');
  return result.error;
}

test('the alias workflow is never mutated', () => {
  const wf = workflow('txt2img_sd15_api.json');
  const before = JSON.stringify(wf);
  ok(
    compile(
      { prompt: 'a fox', seed: 7n, lora_1: 'x.safetensors' },
      { workflow: wf, fixed: [{ node: '310', field: 'steps', value: 9 }] },
      { jobId: 'j' },
    ),
  );
  // bypassing the LoRA stack: MODEL and CLIP found by type (object_info types the checkpoint's outputs)
  const r = ok(compile({}, { workflow: wf, bypass: ['313'] }, { jobId: 'j', objectInfo: objectInfo() }));
  assert.deepEqual(
    [r.prompt['310'].inputs.model, r.prompt['132'].inputs.clip],
    [
      ['312', 0],
      ['312', 1],
    ],
  );
  assert.equal(JSON.stringify(wf), before);
});

test('pins are coerced to the input type per object_info, and beat the request', () => {
  const alias: GenerationAlias = {
    workflow: workflow('txt2img_sd15_api.json'),
    fixed: [
      { node: '310', field: 'steps', value: '25' }, // INT from text
      { node: '310', field: 'cfg', value: '6.5' }, // FLOAT from text
      { node: '310', field: 'sampler_name', value: 'dpmpp_2m' }, // legacy combo list
      { node: 'input_width', field: 'value', value: 768 }, // by title
    ],
  };
  const r = ok(compile({ prompt: 'a fox' }, alias, { jobId: 'j', objectInfo: objectInfo(), random: half }));
  assert.equal(r.prompt['310'].inputs.steps, 25);
  assert.equal(r.prompt['310'].inputs.cfg, 6.5);
  assert.equal(r.prompt['310'].inputs.sampler_name, 'dpmpp_2m');
  assert.equal(r.prompt['146'].inputs.value, 768);

  const overridden = refused(compile({ steps: 40 }, alias, { jobId: 'j', objectInfo: objectInfo() }));
  assert.deepEqual([overridden.status, overridden.param], [400, 'steps']);
  assert.match(overridden.message, /fixed/);
  // size → width is pinned: refused too, naming width
  assert.equal(refused(compile({ size: '1024x1024' }, alias, { jobId: 'j', objectInfo: objectInfo() })).param, 'width');
});

test('a pin that does not fit its input is the alias at fault (500), not the client', () => {
  const alias: GenerationAlias = {
    workflow: workflow('txt2img_sd15_api.json'),
    fixed: [{ node: '310', field: 'sampler_name', value: 'no_such_sampler' }],
  };
  const e = refused(compile({}, alias, { jobId: 'j', objectInfo: objectInfo() }));
  assert.equal(e.status, 500);
  assert.equal(e.param, 'fixed[0].value');
  assert.match(e.message, /must be one of: euler/);
});

test('request values are coerced and bounded per object_info; size and n expand', () => {
  const alias = { workflow: workflow('stable_audio_open_api.json') };
  const r = ok(
    compile({ prompt: 'rain on a tin roof', steps: '30', cfg: 5, seconds: 12.5, n: 2 }, alias, {
      jobId: 'j',
      objectInfo: objectInfo(),
      random: half,
    }),
  );
  assert.equal(r.prompt['6'].inputs.text, 'rain on a tin roof');
  assert.equal(r.prompt['3'].inputs.steps, 30);
  assert.equal(r.prompt['11'].inputs.seconds, 12.5);
  assert.equal(r.prompt['11'].inputs.batch_size, 2);
  assert.deepEqual(r.outputs, ['13']);
  assert.equal(refused(compile({ steps: 0 }, alias, { jobId: 'j', objectInfo: objectInfo() })).param, 'steps');
  assert.equal(refused(compile({ sampler: 'nope' }, alias, { jobId: 'j', objectInfo: objectInfo() })).param, 'sampler');
  assert.equal(refused(compile({ stepz: 3 }, alias, { jobId: 'j' })).param, 'stepz');

  const sd = ok(
    compile(
      { size: '640x896' },
      { workflow: workflow('txt2img_sd15_api.json') },
      { jobId: 'j', objectInfo: objectInfo() },
    ),
  );
  assert.deepEqual([sd.prompt['146'].inputs.value, sd.prompt['147'].inputs.value], [640, 896]);
});

test('list and object values are refused: a two-element list would be read as a link', () => {
  const alias = { workflow: workflow('txt2img_sd15_api.json') };
  for (const value of [['310', 0], ['a', 'b', 'c'], { text: 'x' }]) {
    const e = refused(compile({ prompt: value }, alias, { jobId: 'j' }));
    assert.deepEqual([e.status, e.param], [400, 'prompt']);
  }
});

test('a 19-digit seed (bigint or decimal text) survives exactly into promptJson', () => {
  const alias = { workflow: workflow('txt2img_sd15_api.json') };
  for (const seed of [9223372036854775807n, '9223372036854775807']) {
    const r = ok(compile({ seed }, alias, { jobId: 'j', objectInfo: objectInfo() }));
    assert.equal(r.seed, '9223372036854775807');
    assert.match(r.promptJson, /"69":\{"inputs":\{"value":9223372036854775807\}/);
    assert.equal(typeof r.prompt['69'].inputs.value, 'bigint');
  }
  // beyond int64, or a number whose digits were already lost: refused
  assert.equal(
    refused(compile({ seed: 9223372036854775808n }, alias, { jobId: 'j', objectInfo: objectInfo() })).param,
    'seed',
  );
  assert.equal(refused(compile({ seed: 2 ** 60 }, alias, { jobId: 'j', objectInfo: objectInfo() })).param, 'seed');
  // with no seed, one is drawn from random() and reported
  const drawn = ok(compile({}, alias, { jobId: 'j', objectInfo: objectInfo(), random: () => 0.25 }));
  assert.equal(drawn.seed, String(Math.floor(0.25 * 2 ** 53)));
  assert.equal(JSON.parse(drawn.promptJson)['69'].inputs.value, Math.floor(0.25 * 2 ** 53));
});

// --- image slots: qwen img2img has three reference images (126, 127, 128) ---

const qwen = (onEmpty?: 'placeholder' | 'required' | 'disable'): GenerationAlias => ({
  workflow: workflow('img2img_qwen_api.json'),
  mapping: { image_2: { node: 'input_reference_image_2', field: 'image', ...(onEmpty ? { on_empty: onEmpty } : {}) } },
});

test('a provided image becomes a job-specific upload written into the loader', () => {
  const r = ok(
    compile({}, qwen(), {
      jobId: 'job42',
      objectInfo: objectInfo(),
      images: { image: { ext: 'webp' }, image_2: { ext: 'png' } },
    }),
  );
  assert.deepEqual(
    r.uploads.filter((u) => !u.placeholder),
    [
      { param: 'image', node: '126', field: 'image', name: 'gw_job42_image.webp' },
      { param: 'image_2', node: '127', field: 'image', name: 'gw_job42_image_2.png' },
    ],
  );
  assert.equal(r.prompt['127'].inputs.image, 'gw_job42_image_2.png');
  // a file name in the request is not an image: the client cannot point at server files
  assert.equal(refused(compile({ image: 'secret.png' }, qwen(), { jobId: 'j' })).param, 'image');
});

test('empty slot, placeholder (the default): the named 8x8 placeholder, also an upload', () => {
  for (const alias of [qwen(), qwen('placeholder')]) {
    const r = ok(compile({}, alias, { jobId: 'j', objectInfo: objectInfo(), images: { image: { ext: 'png' } } }));
    assert.equal(r.prompt['127'].inputs.image, PLACEHOLDER_IMAGE_NAME);
    assert.deepEqual(
      r.uploads.find((u) => u.param === 'image_2'),
      { param: 'image_2', node: '127', field: 'image', name: PLACEHOLDER_IMAGE_NAME, placeholder: true },
    );
    assert.deepEqual(r.removed, []);
  }
});

test('empty slot, required: 400 naming the slot (the baked-in file is never used)', () => {
  const e = refused(
    compile({}, qwen('required'), { jobId: 'j', objectInfo: objectInfo(), images: { image: { ext: 'png' } } }),
  );
  assert.deepEqual([e.status, e.param], [400, 'image_2']);
});

test('empty slot, disable: the loader goes, optional consumers are unwired and keep running', () => {
  const r = ok(
    compile({}, qwen('disable'), { jobId: 'j', objectInfo: objectInfo(), images: { image: { ext: 'png' } } }),
  );
  assert.deepEqual(r.removed, ['127']);
  // image2 is optional on TextEncodeQwenImageEditPlus: unwired, both encoders stay
  assert.equal('image2' in r.prompt['60'].inputs, false);
  assert.equal('image2' in r.prompt['62'].inputs, false);
  assert.deepEqual(r.prompt['60'].inputs.image1, ['126', 0]);
  assert.deepEqual(r.outputs, ['10']);
});

test('disable that would prune the output is refused, naming the slot', () => {
  // image 1 feeds ColorMatchV2 (a custom class, so its inputs count as required) → PreviewImage
  const alias: GenerationAlias = {
    workflow: workflow('img2img_qwen_api.json'),
    mapping: { image: { node: '126', field: 'image', on_empty: 'disable' } },
  };
  const e = refused(compile({}, alias, { jobId: 'j', objectInfo: objectInfo() }));
  assert.deepEqual([e.status, e.param], [400, 'image']);
  assert.match(e.message, /output \(10\)/);
});

test('bypass ComfyUI-style: the consumer takes the bypassed node input of the same type', () => {
  // ColorMatchV2 is not in object_info; its output type comes from PreviewImage.images (IMAGE),
  // its inputs' types from their sources: image_target ← VAEDecode (IMAGE) is the first match
  const alias: GenerationAlias = { ...qwen('disable'), bypass: ['ColorMatchV2'] };
  const r = ok(compile({}, alias, { jobId: 'j', objectInfo: objectInfo(), images: { image: { ext: 'png' } } }));
  assert.deepEqual(r.bypassed, ['123']);
  assert.deepEqual(r.prompt['10'].inputs.images, ['82', 0]);
  assert.equal('123' in r.prompt, false);
});

// --- the Trellis.2 mesh workflow: six output nodes, almost no class in object_info ---

const trellis = (bypass: string[]): GenerationAlias => ({
  workflow: workflow('img2mesh-trellis2_high_api.json'),
  bypass,
});

test('trellis: unary clean-up nodes bypass as pass-throughs (and the notes say it was a guess)', () => {
  const r = ok(
    compile({}, trellis(['38', '53']), { jobId: 'j', objectInfo: objectInfo(), images: { image: { ext: 'png' } } }),
  );
  assert.deepEqual(r.bypassed, ['38', '53']);
  assert.deepEqual(r.removed, []);
  assert.deepEqual(r.prompt['37'].inputs.mesh, ['49', 0]);
  assert.deepEqual(r.prompt['82'].inputs.trimesh, ['57', 0]);
  assert.deepEqual(r.outputs, ['33', '36', '70', '71', '82', '83']);
  assert.equal(r.notes.filter((n) => /passed through/.test(n)).length, 2);
});

test('trellis: bypassing the refiner prunes everything that needed it, exactly', () => {
  // the refiner (41) has three linked inputs and no known types: nothing to reconnect to, so its
  // consumer (39) goes, and with it the refined branch; Trellis2Continue (46) sequences the
  // texturing (57) after it, so the textured outputs go too. The white mesh export (33) stays.
  const r = ok(
    compile({}, trellis(['53', '41']), { jobId: 'j', objectInfo: objectInfo(), images: { image: { ext: 'png' } } }),
  );
  assert.deepEqual(r.bypassed, ['53', '41']);
  assert.deepEqual(r.removed, ['36', '37', '38', '39', '46', '49', '57', '70', '71', '82', '83']);
  assert.deepEqual(r.outputs, ['33']);
  assert.ok(r.notes.includes('Trellis2Continue is not in object_info: its linked inputs are treated as required'));
  // without any object_info the result is the same, and says so once
  const bare = ok(compile({}, trellis(['53', '41']), { jobId: 'j', images: { image: { ext: 'png' } } }));
  assert.deepEqual(bare.removed, r.removed);
  assert.ok(bare.notes.includes('no object_info: every linked input is treated as required'));
});

test('trellis: disabling the only image would remove every output → 400 naming the slot', () => {
  const alias: GenerationAlias = {
    workflow: workflow('img2mesh-trellis2_high_api.json'),
    mapping: { image: { node: 'input_image', field: 'image', on_empty: 'disable' } },
  };
  const e = refused(compile({}, alias, { jobId: 'j', objectInfo: objectInfo() }));
  assert.deepEqual([e.status, e.param], [400, 'image']);
});

test('trellis: an explicit output that a bypass prunes is an alias fault', () => {
  const e = refused(
    compile({}, { ...trellis(['41']), output: 'Output' }, { jobId: 'j', images: { image: { ext: 'png' } } }),
  );
  assert.equal(e.status, 500);
});
