/**
 * What the job store does not keep of a job that is still going: its place in the queue,
 * its step progress, the latest preview, and who is listening. One entry per unfinished job
 * in this process; gone once the job settles (the store then has everything). Events go to
 * listeners synchronously, in order; a listener that throws is dropped, never the job.
 */
import type { JobEvent, JobView } from '../service-types.ts';
import type { Job } from './job-types.ts';

export interface LiveState {
  /** Position while parked (a getter: the scheduler knows it); null when not parked. */
  position: () => number | null;
  progress: number;
  node: string | null;
  step?: { value: number; max: number };
  preview?: { mime: string; bytes: Buffer };
  readonly listeners: Set<(event: JobEvent) => void>;
  /** Cancels the run: leaves the queue, or interrupts the prompt. */
  readonly abort: AbortController;
  /** Resolves with the terminal view. */
  readonly settled: Promise<JobView>;
  readonly settle: (view: JobView) => void;
}

export class LiveJobs {
  private readonly jobs = new Map<string, LiveState>();

  start(id: string): LiveState {
    let settle!: (view: JobView) => void;
    const settled = new Promise<JobView>((resolve) => {
      settle = resolve;
    });
    const state: LiveState = {
      position: () => null,
      progress: 0,
      node: null,
      listeners: new Set(),
      abort: new AbortController(),
      settled,
      settle,
    };
    this.jobs.set(id, state);
    return state;
  }

  get(id: string): LiveState | undefined {
    return this.jobs.get(id);
  }

  get size(): number {
    return this.jobs.size;
  }

  ids(): string[] {
    return [...this.jobs.keys()];
  }

  emit(id: string, event: JobEvent): void {
    const state = this.jobs.get(id);
    if (state) emitTo(state, event);
  }

  /** The terminal event: listeners hear it, waiters get the view, the entry goes. */
  finish(id: string, event: Extract<JobEvent, { job: JobView }>): void {
    const state = this.jobs.get(id);
    if (!state) return;
    this.jobs.delete(id);
    emitTo(state, event);
    state.listeners.clear();
    state.settle(event.job);
  }
}

function emitTo(state: LiveState, event: JobEvent): void {
  for (const listener of [...state.listeners]) {
    try {
      listener(event);
    } catch {
      state.listeners.delete(listener);
    }
  }
}

/** Queue positions of parked jobs are re-read for their listeners this often. */
const POSITION_EVERY_MS = 1_000;

/**
 * Follows a job that is still going: `listener` hears where it is now (its queue position, or
 * its box and progress), then every event, and a parked job's position as it moves. Returns the
 * unsubscribe.
 */
export function followLive(job: Job, state: LiveState, listener: (event: JobEvent) => void): () => void {
  if (job.status === 'queued') listener({ type: 'queued', position: state.position() });
  else {
    listener({ type: 'running', backend: job.backend ?? '' });
    listener({
      type: 'progress',
      progress: Math.max(state.progress, job.progress),
      node: state.node,
      ...(state.step ? { step: state.step } : {}),
    });
  }
  let lastPosition = job.status === 'queued' ? state.position() : null;
  const positions = setInterval(() => {
    const position = state.position();
    if (position !== null && position !== lastPosition) listener({ type: 'queued', position });
    lastPosition = position;
  }, POSITION_EVERY_MS);
  positions.unref();
  state.listeners.add(listener);
  return () => {
    clearInterval(positions);
    state.listeners.delete(listener);
  };
}
