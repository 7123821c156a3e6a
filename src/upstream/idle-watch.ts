/**
 * The backend's silence on a body being read (an SSE relay, piped bytes, a non-stream JSON
 * answer): one timer for the whole body, re-armed per chunk with refresh() (no allocation).
 * When it runs out the upstream body is destroyed with undici's body-timeout code, so the
 * reader's error path sees a timeout.
 *
 * Two things are not the backend's silence, and never end the call as its fault:
 * - time the gateway spends not reading because its client is backed up (`clientWait`): the
 *   timer is paused then, and counts a whole period again once the client drained; that wait
 *   has its own owner and deadline (`client_stall_timeout_s`, see `drained`);
 * - a stalled event loop (a loaded machine, a long GC): timers run before the loop reads its
 *   sockets, so after a stall the timer can find bytes waiting that nobody looked at yet. An
 *   expiry is only believed after one more I/O turn (`setImmediate` runs after the poll phase)
 *   that brought no chunk.
 */
export class UpstreamIdleWatch {
  private timer?: NodeJS.Timeout;
  private paused = false;
  private stopped = false;
  /** Chunks seen so far: an expiry is confirmed only if none came in the I/O turn after it. */
  private beats = 0;
  /** The deadline passed and the body was destroyed for it. */
  expired = false;

  constructor(
    private readonly body: { destroy(err?: Error): unknown },
    private readonly idleMs: number,
  ) {}

  /** Starts counting (at the first body byte); 0 ms = no deadline. */
  start(): void {
    if (this.idleMs > 0 && !this.timer && !this.stopped) this.timer = setTimeout(() => this.expire(), this.idleMs);
  }

  /** The backend spoke (or the gateway finished its own work on a chunk). */
  refresh(): void {
    this.beats++;
    if (!this.paused && !this.stopped) this.timer?.refresh();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Waits for the client's drain with the backend's clock stopped, then gives the backend a whole period again. */
  async clientWait(pending: Promise<void>): Promise<void> {
    this.paused = true;
    try {
      await pending;
    } finally {
      this.paused = false;
      if (!this.stopped) this.timer?.refresh();
    }
  }

  private expire(): void {
    if (this.paused || this.stopped) return; // clientWait's end re-arms it
    const beats = this.beats;
    setImmediate(() => {
      // a chunk that was waiting in the socket re-armed the timer; a client wait will
      if (this.paused || this.stopped || this.beats !== beats) return;
      this.expired = true;
      this.body.destroy(Object.assign(new Error(`no data for ${this.idleMs} ms`), { code: 'UND_ERR_BODY_TIMEOUT' }));
    });
  }
}
