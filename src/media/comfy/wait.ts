/**
 * Waiting for one submitted ComfyUI prompt (ComfyClient.waitFor): `/history` is the source of
 * truth, polled every `pollMs`; websocket events only make it poll at once. The loop ends on
 * the history entry, a cancel, `maxWaitMs`, a box that stops answering, a prompt the box no
 * longer knows, or an `abandonIf` reason. Every way out that leaves our prompt on the box
 * (cancel, timeout, abandon, unreachable) dequeues and interrupts it first (bounded); when
 * the box does not answer that, the client remembers the prompt and takes it off later.
 */
import type { ComfyHistoryEntry } from './answers.ts';
import type { ComfyProgressListener } from './progress.ts';

export interface WaitOptions {
  /** Poll /history this often (ms), websocket or not. */
  pollMs: number;
  /** Then: interrupt / dequeue the prompt and answer `timeout`. */
  maxWaitMs: number;
  /** Cancel: dequeue (pending) and interrupt (running) the prompt, answer `interrupted`. */
  signal?: AbortSignal;
  /**
   * No answer from the server for this long → `unreachable` (the prompt is taken off the box, now or
   * once it answers). Default 30 000.
   */
  unreachableAfterMs?: number;
  /**
   * Every this many polls without an entry, /queue is checked too: neither queued nor in history →
   * `lost`. Default 5.
   */
  queueCheckEvery?: number;
  /**
   * Checked every poll: a reason (the box was marked stuck…) dequeues and interrupts the prompt and
   * answers `abandoned`.
   */
  abandonIf?: () => string | undefined;
}

export type WaitResult =
  | { kind: 'done'; entry: ComfyHistoryEntry }
  | { kind: 'failed'; message: string; node?: string }
  /** Our signal fired, or the box ended the prompt as interrupted (someone else may have pressed Cancel there). */
  | { kind: 'interrupted' }
  | { kind: 'timeout' }
  | { kind: 'unreachable'; error: string }
  /** The server no longer knows the prompt (it restarted): not queued, not running, no history. */
  | { kind: 'lost' }
  | { kind: 'abandoned'; reason: string };

export type HistoryAnswer = { ok: true; entry?: ComfyHistoryEntry } | { ok: false; error: string };

/** What the wait needs of the client. */
export interface PromptWatch {
  history(promptId: string, signal?: AbortSignal): Promise<HistoryAnswer>;
  /** Not running, not pending, and no history entry. */
  isLost(promptId: string, signal?: AbortSignal): Promise<boolean>;
  /** Dequeue + interrupt, bounded; a box that does not answer gets it done later. */
  cancel(promptId: string): Promise<void>;
  onProgress(promptId: string, listener: ComfyProgressListener): () => void;
  forget(promptId: string): void;
}

export async function waitForPrompt(watch: PromptWatch, promptId: string, o: WaitOptions): Promise<WaitResult> {
  const deadline = Date.now() + o.maxWaitMs;
  const unreachableAfter = o.unreachableAfterMs ?? 30_000;
  const queueEvery = o.queueCheckEvery ?? 5;
  let hinted = false;
  let wake: (() => void) | undefined;
  const kick = () => {
    hinted = true;
    wake?.();
  };
  const unsubscribe = watch.onProgress(promptId, (e) => {
    if (e.kind === 'success' || e.kind === 'error' || e.kind === 'interrupted') kick();
  });
  o.signal?.addEventListener('abort', kick);
  try {
    let failingSince: number | undefined;
    let polls = 0;
    for (;;) {
      if (o.signal?.aborted) {
        await watch.cancel(promptId);
        return { kind: 'interrupted' };
      }
      hinted = false;
      const h = await watch.history(promptId, pollSignal(o.signal, deadline));
      if (h.ok) {
        failingSince = undefined;
        if (h.entry) return settledResult(h.entry);
        if (++polls % queueEvery === 0 && (await watch.isLost(promptId, pollSignal(o.signal, deadline))))
          return { kind: 'lost' };
      } else if (!o.signal?.aborted) {
        failingSince ??= Date.now();
        if (Date.now() - failingSince >= unreachableAfter) {
          // the box may come back with our prompt still queued or running: never leave it there
          await watch.cancel(promptId);
          return { kind: 'unreachable', error: h.error };
        }
      }
      if (o.signal?.aborted) continue;
      const abandon = o.abandonIf?.();
      if (abandon !== undefined) {
        await watch.cancel(promptId);
        return { kind: 'abandoned', reason: abandon };
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        await watch.cancel(promptId);
        return { kind: 'timeout' };
      }
      if (!hinted) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.min(o.pollMs, left));
          function done() {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          }
          wake = done;
        });
      }
    }
  } finally {
    unsubscribe();
    o.signal?.removeEventListener('abort', kick);
    watch.forget(promptId);
  }
}

/** A finished prompt's history entry → the wait's answer. */
export function settledResult(entry: ComfyHistoryEntry): WaitResult {
  const status = entry.status;
  if (!status || status.status_str === 'success') return { kind: 'done', entry };
  const messages = Array.isArray(status.messages) ? status.messages : [];
  if (messages.some((m) => Array.isArray(m) && m[0] === 'execution_interrupted')) return { kind: 'interrupted' };
  const err = messages.find((m) => Array.isArray(m) && m[0] === 'execution_error')?.[1];
  if (err) {
    const message = String(err.exception_message ?? err.exception_type ?? 'execution error');
    return err.node_id !== undefined && err.node_id !== null
      ? { kind: 'failed', message, node: String(err.node_id) }
      : { kind: 'failed', message };
  }
  return { kind: 'failed', message: `ComfyUI ended the prompt with status ${String(status.status_str)}` };
}

/**
 * A poll's signal: the job's cancel, and the wait's own deadline (a poll never outlives max_wait by
 * more than a second).
 */
function pollSignal(job: AbortSignal | undefined, deadline: number): AbortSignal {
  const bound = AbortSignal.timeout(Math.max(1_000, deadline - Date.now()));
  return job ? AbortSignal.any([job, bound]) : bound;
}
