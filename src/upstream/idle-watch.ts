/**
 * The backend's silence on a body being relayed (SSE or raw bytes): one timer for the whole
 * body, re-armed per chunk with refresh() (no allocation); when it fires the upstream body is
 * destroyed with undici's body-timeout code, so the relay's error path sees a timeout. Time
 * spent waiting for a slow client to drain is not the backend's silence: the timer re-arms
 * itself while a `clientWait` is under way.
 */
export class UpstreamIdleWatch {
  private timer?: NodeJS.Timeout;
  private waitingForClient = false;

  constructor(private readonly body: { destroy(err?: Error): unknown }, private readonly idleMs: number) {}

  /** Starts counting (at the first body byte); 0 ms = no deadline. */
  start(): void {
    if (this.idleMs > 0 && !this.timer) this.timer = setTimeout(() => this.expire(), this.idleMs);
  }

  /** The backend spoke (or the gateway finished its own work on a chunk). */
  refresh(): void {
    this.timer?.refresh();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** Waits for the client's drain without counting that time against the backend. */
  async clientWait(pending: Promise<void>): Promise<void> {
    this.waitingForClient = true;
    try {
      await pending;
    } finally {
      this.waitingForClient = false;
    }
  }

  private expire(): void {
    if (this.waitingForClient) {
      this.timer?.refresh();
      return;
    }
    this.body.destroy(Object.assign(new Error(`no data for ${this.idleMs} ms`), { code: 'UND_ERR_BODY_TIMEOUT' }));
  }
}
