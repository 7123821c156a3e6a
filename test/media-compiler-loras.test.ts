import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectInfo, workflow } from './helpers/comfy-workflows.ts';
import {
  compile,
  installedLoras,
  loraSlots,
  type CompileResult,
  type GenerationAlias,
  type ObjectInfo,
} from '../src/media/compiler/index.ts';

function ok(result: CompileResult) {
  assert.ok(result.ok, `expected ok, got ${JSON.stringify(!result.ok && result.error)}`);
  return result;
}

// --- rgthree's 4-slot stack (sd15, node 313); slot 2 pinned by the operator ---

const sd15: () => GenerationAlias = () => ({
  workflow: workflow('txt2img_sd15_api.json'),
  fixed: [{ node: '313', field: 'lora_02', value: 'detail-tweaker.safetensors' }],
});

test('loraSlots lists the stack slots; None is free, a pinned one is not', () => {
  const wf = workflow('txt2img_sd15_api.json');
  assert.deepEqual(
    loraSlots(wf).map((s) => [s.nameField, s.free]),
    [
      ['lora_01', true],
      ['lora_02', true],
      ['lora_03', true],
      ['lora_04', true],
    ],
  );
  assert.deepEqual(
    loraSlots(workflow('img2img_qwen_api.json')).map((s) => s.free),
    [false, true, true, true],
  );
});

test('rgthree: LoRAs cascade into the free slots, around the pinned one', () => {
  const r = ok(
    compile({ lora_1: 'a.safetensors', strength_1: 0.7, lora_2: 'b.safetensors', lora_3: 'c.safetensors' }, sd15(), {
      jobId: 'j',
    }),
  );
  const stack = r.prompt['313'].inputs;
  assert.deepEqual(
    [stack.lora_01, stack.lora_02, stack.lora_03, stack.lora_04],
    ['a.safetensors', 'detail-tweaker.safetensors', 'b.safetensors', 'c.safetensors'],
  );
  assert.deepEqual([stack.strength_01, stack.strength_03], [0.7, 1]);
  assert.deepEqual(r.bypassed, []);
});

test('rgthree: more LoRAs than free slots → 400 naming the first that does not fit', () => {
  const r = compile({ lora_1: 'a', lora_2: 'b', lora_3: 'c', lora_4: 'd' }, sd15(), { jobId: 'j' });
  assert.ok(!r.ok);
  assert.deepEqual([r.error.status, r.error.param], [400, 'lora_4']);
  assert.match(r.error.message, /at most 3 LoRAs/);
});

test('a strength without its LoRA, or a non-number strength, is refused', () => {
  const a = compile({ strength_2: 0.5 }, sd15(), { jobId: 'j' });
  assert.ok(!a.ok && a.error.param === 'strength_2');
  const b = compile({ lora_1: 'a', strength_1: 'strong' }, sd15(), { jobId: 'j' });
  assert.ok(!b.ok && b.error.param === 'strength_1');
});

// --- core LoraLoaderModelOnly chain (flux_lora_chain: 42 user LoRA → 62 realism LoRA) ---

/** The operator marks the user slot free ("None") and pins the realism LoRA. */
const fluxChain = (): GenerationAlias => {
  const wf = workflow('flux_lora_chain_api.json');
  wf['42'].inputs.lora_name = 'None';
  return { workflow: wf, fixed: [{ node: '62', field: 'lora_name', value: 'flux_realism_v2.safetensors' }] };
};

test('core chain as shipped: both names are the author’s choice, so no slot is free', () => {
  assert.deepEqual(
    loraSlots(workflow('flux_lora_chain_api.json')).map((s) => [s.node, s.free]),
    [
      ['42', false],
      ['62', false],
    ],
  );
  const r = compile({ lora_1: 'mine.safetensors' }, { workflow: workflow('flux_lora_chain_api.json') }, { jobId: 'j' });
  assert.ok(!r.ok && r.error.param === 'lora_1' && /at most 0 LoRAs/.test(r.error.message));
});

test('core chain: the LoRA fills the free node upstream, the pinned one is kept, strength goes to strength_model', () => {
  const r = ok(
    compile({ lora_1: 'mine.safetensors', strength_1: '0.8' }, fluxChain(), { jobId: 'j', objectInfo: objectInfo() }),
  );
  assert.deepEqual([r.prompt['42'].inputs.lora_name, r.prompt['42'].inputs.strength_model], ['mine.safetensors', 0.8]);
  assert.equal(r.prompt['62'].inputs.lora_name, 'flux_realism_v2.safetensors');
  assert.deepEqual(r.bypassed, []);
});

test('core chain: overflow → 400', () => {
  const r = compile({ lora_1: 'a.safetensors', lora_2: 'b.safetensors' }, fluxChain(), { jobId: 'j' });
  assert.ok(!r.ok);
  assert.deepEqual([r.error.status, r.error.param], [400, 'lora_2']);
});

test('core chain: a free node left unfilled is bypassed (ComfyUI refuses an empty lora_name)', () => {
  const r = ok(compile({}, fluxChain(), { jobId: 'j', objectInfo: objectInfo() }));
  assert.deepEqual(r.bypassed, ['42']);
  assert.deepEqual(r.prompt['62'].inputs.model, ['12', 0]);
  assert.deepEqual(r.outputs, ['44']);
});

test('installedLoras: the union of every loader class’s LoRA combos; None is not a file', () => {
  const real = objectInfo();
  assert.deepEqual(installedLoras(real), []); // that server had no LoRAs
  const withLoras: ObjectInfo = {
    ...real,
    LoraLoader: {
      ...real.LoraLoader,
      input: { required: { ...real.LoraLoader.input!.required, lora_name: [['a.safetensors', 'b.safetensors']] } },
    },
    'Lora Loader Stack (rgthree)': {
      input: { required: { lora_01: [['None', 'c.safetensors', 'a.safetensors']] } },
      output: ['MODEL', 'CLIP'],
    },
  };
  assert.deepEqual(installedLoras(withLoras), ['a.safetensors', 'b.safetensors', 'c.safetensors']);
  const r = compile({ lora_1: 'zzz.safetensors' }, sd15(), { jobId: 'j', objectInfo: withLoras });
  assert.ok(!r.ok && r.error.param === 'lora_1' && /not installed/.test(r.error.message));
  ok(
    compile(
      { lora_1: 'c.safetensors' },
      { workflow: workflow('txt2img_sd15_api.json') },
      { jobId: 'j', objectInfo: withLoras },
    ),
  );
});
