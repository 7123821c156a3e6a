/**
 * A running prompt's progress, from its websocket events: the weight of the graph's nodes done
 * (cached ones count as done) plus the share of the current node's steps, as 0–99 until
 * `/history` says it is finished (then the job is 100). Never goes backwards. Pure.
 *
 * Sampler nodes are where the time goes, so together they weigh `SAMPLER_SHARE` of the bar
 * and every other node shares the rest: a txt2img bar then moves with the steps instead of
 * jumping to ~80 % when the sampler starts and crawling after.
 */
import type { ComfyProgressEvent } from './progress.ts';
import type { Workflow } from '../compiler/index.ts';

export interface ProgressPoint {
  progress: number;
  /** The node running now: its title, else its class. */
  node: string | null;
  step?: { value: number; max: number };
}

/** The part of the bar the sampler nodes fill, when the graph has any. */
export const SAMPLER_SHARE = 0.8;

const isSampler = (classType: string) => /sampler/i.test(classType) && !/select|loader/i.test(classType);

export class ProgressTracker {
  private readonly done = new Set<string>();
  private readonly weights = new Map<string, number>();
  private current: string | undefined;
  private progress = 0;
  private stopped = false;

  constructor(
    private readonly prompt: Workflow,
    private readonly onProgress: (point: ProgressPoint) => void,
    private readonly onPreview: (preview: { mime: string; bytes: Buffer }) => void,
  ) {
    const ids = Object.keys(prompt);
    const samplers = ids.filter((id) => isSampler(prompt[id].class_type));
    const others = ids.length - samplers.length;
    for (const id of ids) {
      const sampler = samplers.includes(id);
      const weight =
        samplers.length === 0 || others === 0
          ? 1 / Math.max(1, ids.length)
          : sampler
            ? SAMPLER_SHARE / samplers.length
            : (1 - SAMPLER_SHARE) / others;
      this.weights.set(id, weight);
    }
  }

  observe(event: ComfyProgressEvent): void {
    if (this.stopped) return;
    switch (event.kind) {
      case 'cached':
        for (const node of event.nodes) this.done.add(node);
        return this.report();
      case 'executing':
        if (this.current !== undefined) this.done.add(this.current);
        this.current = event.node;
        return this.report();
      case 'executed':
        this.done.add(event.node);
        return this.report();
      case 'progress':
        this.current = event.node;
        return this.report(event.max > 0 ? { value: event.value, max: event.max } : undefined);
      case 'preview':
        return this.onPreview({ mime: event.mime, bytes: event.bytes });
      default:
        return undefined;
    }
  }

  stop(): void {
    this.stopped = true;
  }

  private report(step?: { value: number; max: number }): void {
    let share = 0;
    for (const node of this.done) share += this.weights.get(node) ?? 0;
    if (step && this.current !== undefined && !this.done.has(this.current)) {
      share += Math.min(1, step.value / step.max) * (this.weights.get(this.current) ?? 0);
    }
    share *= 100;
    this.progress = Math.max(this.progress, Math.min(99, Math.floor(share)));
    this.onProgress({ progress: this.progress, node: this.label(this.current), ...(step ? { step } : {}) });
  }

  private label(node: string | undefined): string | null {
    if (node === undefined) return null;
    const entry = this.prompt[node];
    return entry?._meta?.title || entry?.class_type || node;
  }
}
