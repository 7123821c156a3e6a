/** One GPU card shared by an LLM backend and a ComfyUI, for the GPU-group scheduler tests. */
import { schedulerHarness, type FleetBackend } from './scheduler-harness.ts';

/** A llama-swap (cap 4) and a ComfyUI (cap 1) sharing the card `box`, and an ungrouped spare. */
export const CARD: FleetBackend[] = [
  { name: 'llm', cap: 4, group: 'box' },
  { name: 'comfy', cap: 1, group: 'box', kind: 'media' },
  { name: 'spare', cap: 1 },
];

/** The harness over CARD with `box` configured at `cap` (omitted: not configured, cap 1). */
export function card(cap?: number) {
  const harness = schedulerHarness(CARD);
  if (cap !== undefined) harness.scheduler.configureGroups({ box: { cap } });
  const group = (name = 'box') => harness.scheduler.snapshot().groups.find((g) => g.name === name);
  return { ...harness, group };
}
