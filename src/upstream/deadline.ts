/**
 * The abort signal of one attempt on one backend: it fires when the client leaves (the
 * parent signal) or when the attempt's deadline passes, whichever comes first. The deadline's
 * error carries an undici timeout code, so it is classified as a timeout like undici's own.
 */
export class AttemptDeadline {
  private readonly controller = new AbortController();
  private timer?: NodeJS.Timeout;
  private readonly onParentAbort = () => this.controller.abort(this.parent.reason);

  constructor(private readonly parent: AbortSignal) {
    if (parent.aborted) this.controller.abort(parent.reason);
    else parent.addEventListener('abort', this.onParentAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Aborts after `ms` (0 = never) with `message`; re-arming replaces the previous deadline. */
  arm(ms: number, message: string): void {
    this.clear();
    if (!(ms > 0)) return;
    this.timer = setTimeout(() => {
      this.controller.abort(Object.assign(new Error(message), { code: 'UND_ERR_HEADERS_TIMEOUT' }));
    }, ms);
  }

  /** The deadline was met (e.g. the first byte arrived); the parent still aborts. */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  dispose(): void {
    this.clear();
    this.parent.removeEventListener('abort', this.onParentAbort);
  }
}
