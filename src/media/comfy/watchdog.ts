/**
 * The executor watchdog of a ComfyUI backend (pure; the health loop feeds it `/queue`). A
 * box whose executor died keeps accepting prompts: the same prompt stays at the head of the
 * pending queue while nothing runs. That is "stuck" once seen on at least two checks in a row
 * and for at least `stuckAfterMs`; a running prompt, an empty queue or a new head clears it.
 */

export interface QueueView {
  /** Prompt ids running now (ComfyUI runs one). */
  running: readonly string[];
  /** Prompt ids pending, in order. */
  pending: readonly string[];
}

export class ExecutorWatchdog {
  private head?: string;
  private since = 0;
  private checks = 0;

  constructor(private readonly stuckAfterMs: number) {}

  /** Learns from one `/queue` reading at `now`; true while the executor looks stuck. */
  observe(queue: QueueView, now: number): boolean {
    const head = queue.running.length === 0 ? queue.pending[0] : undefined;
    if (head === undefined || head !== this.head) {
      this.head = head;
      this.since = now;
      this.checks = head === undefined ? 0 : 1;
      return false;
    }
    this.checks++;
    return this.checks >= 2 && now - this.since >= this.stuckAfterMs;
  }
}

/** The prompt ids of a `GET /queue` body (`[number, prompt_id, prompt, extra, outputs]` entries). */
export function queueView(body: unknown): QueueView {
  const ids = (list: unknown) =>
    Array.isArray(list)
      ? list.map((e) => (Array.isArray(e) ? e[1] : undefined)).filter((id): id is string => typeof id === 'string')
      : [];
  const q = (body ?? {}) as { queue_running?: unknown; queue_pending?: unknown };
  const pending = (Array.isArray(q.queue_pending) ? [...q.queue_pending] : []).sort((a, b) =>
    Array.isArray(a) && Array.isArray(b) ? Number(a[0]) - Number(b[0]) : 0,
  );
  return { running: ids(q.queue_running), pending: ids(pending) };
}
