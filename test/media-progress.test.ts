/**
 * Job progress from ComfyUI's websocket events (pure): samplers weigh most of the bar, so it
 * follows the steps; cached nodes count as done; it never goes back and stays below 100 until
 * /history says the prompt finished.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProgressTracker, SAMPLER_SHARE } from '../src/media/comfy/prompt-progress.ts';
import { workflow } from './helpers/comfy-workflows.ts';

test('sd15: the bar moves with the sampler steps; cached nodes are done; never backwards, never 100', () => {
  const prompt = workflow('txt2img_sd15_api.json');
  const seen: number[] = [];
  const tracker = new ProgressTracker(
    prompt,
    (p) => seen.push(p.progress),
    () => {},
  );
  const ids = Object.keys(prompt);
  const others = ids.filter((id) => prompt[id].class_type !== 'KSampler');
  tracker.observe({ kind: 'cached', nodes: others.slice(0, 4) });
  const cached = seen.at(-1)!;
  assert.ok(
    cached > 0 && cached < (1 - SAMPLER_SHARE) * 100,
    `cached nodes fill part of the non-sampler share (${cached})`,
  );
  tracker.observe({ kind: 'executing', node: '310' });
  for (let step = 1; step <= 10; step++) tracker.observe({ kind: 'progress', node: '310', value: step, max: 20 });
  const halfway = seen.at(-1)!;
  assert.ok(
    halfway >= cached + 38 && halfway <= cached + 42,
    `half the steps ≈ half the sampler share (${cached} → ${halfway})`,
  );
  tracker.observe({ kind: 'progress', node: '310', value: 3, max: 20 }); // a late, smaller event
  assert.equal(seen.at(-1), halfway, 'never backwards');
  for (const node of ids) tracker.observe({ kind: 'executed', node, output: {} });
  assert.equal(seen.at(-1), 99, 'everything ran, but only /history says done');
  assert.deepEqual(
    [...seen].sort((a, b) => a - b),
    seen,
  );
});

test('a graph without a sampler shares the bar equally', () => {
  const seen: number[] = [];
  const tracker = new ProgressTracker(
    { a: { class_type: 'LoadImage', inputs: {} }, b: { class_type: 'SaveImage', inputs: {} } },
    (p) => seen.push(p.progress),
    () => {},
  );
  tracker.observe({ kind: 'executed', node: 'a', output: {} });
  assert.equal(seen.at(-1), 50);
});
