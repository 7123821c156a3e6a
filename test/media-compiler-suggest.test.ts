import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectInfo, workflow } from './helpers/comfy-workflows.ts';
import { compile, paramFromTitle, suggestMapping, type Mapping } from '../src/media/compiler/index.ts';

const flat = (m: Mapping) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, `${v.node}.${v.field}`]));

test('title names are tidied, typos included', () => {
  assert.equal(paramFromTitle('prompt_positiv'), 'prompt');
  assert.equal(paramFromTitle('prompt_negavtive'), 'negative_prompt');
  assert.equal(paramFromTitle('reference_image_1'), 'image');
  assert.equal(paramFromTitle('reference_image_3'), 'image_3');
  assert.equal(paramFromTitle('image2'), 'image_2');
  assert.equal(paramFromTitle('face_num'), 'face_num');
});

const cases: Array<[string, Record<string, string>]> = [
  [
    'txt2img_sd15_api.json',
    {
      // the titled primitives, not the CLIPTextEncode / EmptyLatentImage fields they are linked to
      prompt: '61.value',
      negative_prompt: '63.value',
      seed: '69.value',
      width: '146.value',
      height: '147.value',
      batch: '311.batch_size',
      steps: '310.steps',
      cfg: '310.cfg',
      sampler: '310.sampler_name',
      scheduler: '310.scheduler',
      denoise: '310.denoise',
    },
  ],
  [
    'text2img_workflow_flux1_api.json',
    {
      prompt: '61.value',
      seed: '69.value',
      width: '146.value',
      height: '147.value',
      batch: '312.batch_size',
      steps: '313.steps',
      cfg: '313.cfg',
      sampler: '313.sampler_name',
      scheduler: '313.scheduler',
      denoise: '313.denoise',
    },
  ],
  [
    // no _meta at all: class rules only; the custom-sampler chain (RandomNoise, BasicScheduler, …)
    'flux_lora_chain_api.json',
    {
      prompt: '6.text',
      seed: '25.noise_seed',
      steps: '17.steps',
      scheduler: '17.scheduler',
      denoise: '17.denoise',
      sampler: '16.sampler_name',
      guidance: '26.guidance',
      batch: '27.batch_size',
    },
  ],
  [
    'img2img_qwen_api.json',
    {
      prompt: '61.value',
      negative_prompt: '63.value',
      seed: '69.value',
      image: '126.image',
      image_2: '127.image',
      image_3: '128.image',
      width: '3.width',
      height: '3.height',
      batch: '3.batch_size',
      steps: '68.steps',
      cfg: '68.cfg',
      sampler: '68.sampler_name',
      scheduler: '68.scheduler',
      denoise: '68.denoise',
    },
  ],
  [
    // Chinese titles, no input_* convention: the sampler's negative link decides which encoder is which
    'stable_audio_open_api.json',
    {
      prompt: '6.text',
      negative_prompt: '7.text',
      seed: '3.seed',
      steps: '3.steps',
      cfg: '3.cfg',
      sampler: '3.sampler_name',
      scheduler: '3.scheduler',
      denoise: '3.denoise',
      seconds: '11.seconds',
      batch: '11.batch_size',
    },
  ],
  [
    // two KSamplerAdvanced: the seed goes to the one that adds noise; cfg (ambiguous) is not guessed
    'img2video_wan_lowram_api.json',
    {
      prompt: '166.value',
      negative_prompt: '167.value',
      image: '168.image',
      length: '170.value',
      seed: '141.noise_seed',
    },
  ],
];

for (const [file, expected] of cases) {
  test(`suggestMapping on ${file}`, () => {
    assert.deepEqual(flat(suggestMapping(workflow(file), objectInfo())), expected);
  });
}

test('krea: input_image1..4 become image, image_2..image_4', () => {
  const m = flat(suggestMapping(workflow('img2img_krea2_api.json')));
  assert.equal(m.image, '17.image');
  assert.equal(m.image_2, '31.image');
  assert.equal(m.image_4, '33.image');
});

test('an explicit mapping wins over the suggestion, and takes its field away from it', () => {
  const wf = workflow('txt2img_sd15_api.json');
  const result = compile(
    { positive: 'a red fox', steps: 12 },
    {
      workflow: wf,
      mapping: { positive: { node: 'input_prompt_positiv', field: 'value' }, steps: { node: '310', field: 'steps' } },
    },
    { jobId: 'j', objectInfo: objectInfo() },
  );
  assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
  assert.equal(result.prompt['61'].inputs.value, 'a red fox');
  assert.equal(result.prompt['310'].inputs.steps, 12);
  // 'prompt' pointed at the same field: the suggestion is gone, so asking for it is unknown
  const again = compile(
    { prompt: 'x' },
    { workflow: wf, mapping: { positive: { node: '61', field: 'value' } } },
    { jobId: 'j' },
  );
  assert.ok(!again.ok);
  assert.equal(again.error.param, 'prompt');
});
