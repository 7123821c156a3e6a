/**
 * A ComfyUI backend's inventory from a base-install /object_info dump, and the executor watchdog
 * over /queue readings with a fake clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { comboChoices } from '../src/media/compiler/combo.ts';
import { inventoryOf } from '../src/media/compiler/inventory.ts';
import { ExecutorWatchdog, queueView } from '../src/media/comfy/watchdog.ts';
import { readFixtureJson } from './helpers/fixtures.ts';

/** A combo's string choices (what the inventory lists). */
const comboOptions = (spec: unknown): string[] =>
  (comboChoices(spec) ?? []).filter((v): v is string => typeof v === 'string');

test('the base-install object_info dump: checkpoints, VAEs, CLIPs, UNETs and LoRAs from the loaders, every class', () => {
  const info =
    readFixtureJson<Record<string, { input: { required: Record<string, unknown> } }>>('comfyui/object_info.json');
  const inv = inventoryOf(info);
  assert.deepEqual(inv.checkpoints, comboOptions(info.CheckpointLoaderSimple.input.required.ckpt_name).sort());
  assert.ok(inv.checkpoints.includes('v1-5-pruned-emaonly.safetensors'));
  for (const v of comboOptions(info.VAELoader.input.required.vae_name)) assert.ok(inv.vaes.includes(v), v);
  for (const c of comboOptions(info.DualCLIPLoader.input.required.clip_name1)) assert.ok(inv.clips.includes(c), c);
  for (const u of comboOptions(info.UNETLoader.input.required.unet_name)) assert.ok(inv.unets.includes(u), u);
  assert.deepEqual(inv.loras, [...new Set(comboOptions(info.LoraLoader.input.required.lora_name))].sort());
  assert.equal(inv.classes.length, Object.keys(info).length);
});

test('custom loaders count by their input names: the rgthree stack, GGUF, the new COMBO format; "None" is no file', () => {
  const inv = inventoryOf({
    'Lora Loader Stack (rgthree)': {
      input: {
        required: { model: ['MODEL'] },
        optional: {
          lora_01: [['None', 'a.safetensors']],
          strength_01: ['FLOAT', {}],
          lora_02: [['None', 'b.safetensors']],
        },
      },
    },
    UnetLoaderGGUF: { input: { required: { unet_name: ['COMBO', { options: ['flux-q4.gguf'] }] } } },
    ClipLoaderGGUF: { input: { required: { clip_name: [['t5-q8.gguf']], type: [['flux']] } } },
    KSampler: { input: { required: { seed: ['INT', { default: 0 }] } } },
  });
  assert.deepEqual(inv.loras, ['a.safetensors', 'b.safetensors']);
  assert.deepEqual(inv.unets, ['flux-q4.gguf']);
  assert.deepEqual(inv.clips, ['t5-q8.gguf']);
  assert.deepEqual(inv.checkpoints, []);
  assert.throws(() => inventoryOf([1, 2]), /object of node classes/);
});

test('watchdog: the same head pending with nothing running, on two checks and for stuck_after_s, is stuck', () => {
  const dog = new ExecutorWatchdog(90_000);
  const stuckQueue = { running: [], pending: ['p1', 'p2'] };
  assert.equal(dog.observe(stuckQueue, 0), false, 'one check is never enough');
  assert.equal(dog.observe(stuckQueue, 60_000), false, 'two checks but not long enough');
  assert.equal(dog.observe(stuckQueue, 90_000), true);
  assert.equal(dog.observe({ running: ['p1'], pending: ['p2'] }, 95_000), false, 'running again: not stuck');
  assert.equal(dog.observe({ running: [], pending: ['p2'] }, 100_000), false, 'a new head starts over');
  assert.equal(dog.observe({ running: [], pending: ['p2'] }, 300_000), true);
  assert.equal(dog.observe({ running: [], pending: [] }, 300_001), false, 'an empty queue is idle, not stuck');
});

test('queueView reads the real /queue shape, pending in submission order', () => {
  assert.deepEqual(queueView(readFixtureJson('comfyui/samples/queue_empty.json')), { running: [], pending: [] });
  const busy = {
    queue_running: [[3, 'run-1', {}, {}, ['9']]],
    queue_pending: [
      [5, 'p-b', {}, {}, []],
      [4, 'p-a', {}, {}, []],
    ],
  };
  assert.deepEqual(queueView(busy), { running: ['run-1'], pending: ['p-a', 'p-b'] });
  assert.deepEqual(queueView(null), { running: [], pending: [] });
});
