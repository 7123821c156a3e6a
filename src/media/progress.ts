/**
 * A running prompt's progress, from its websocket events: the share of the graph's nodes done
 * (cached ones count as done) plus the share of the current node's steps, as 0–99 until
 * `/history` says it is finished (then the job is 100). Never goes backwards. Pure.
 */
import type { ComfyProgressEvent } from './comfy-progress.ts';
import type { Workflow } from './compiler/index.ts';

export interface ProgressPoint {
  progress: number;
  /** The node running now: its title, else its class. */
  node: string | null;
  step?: { value: number; max: number };
}

export class ProgressTracker {
  private readonly done = new Set<string>();
  private current: string | undefined;
  private progress = 0;
  private stopped = false;

  constructor(
    private readonly prompt: Workflow,
    private readonly onProgress: (point: ProgressPoint) => void,
    private readonly onPreview: (preview: { mime: string; bytes: Buffer }) => void,
  ) {}

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
    const total = Math.max(1, Object.keys(this.prompt).length);
    const within = step && this.current !== undefined && !this.done.has(this.current) ? Math.min(1, step.value / step.max) : 0;
    const share = ((this.done.size + within) / total) * 100;
    this.progress = Math.max(this.progress, Math.min(99, Math.floor(share)));
    this.onProgress({ progress: this.progress, node: this.label(this.current), ...(step ? { step } : {}) });
  }

  private label(node: string | undefined): string | null {
    if (node === undefined) return null;
    const entry = this.prompt[node];
    return entry?._meta?.title || entry?.class_type || node;
  }
}
