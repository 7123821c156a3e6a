import type { FastifyReply } from 'fastify';

/**
 * The abort signal a call's upstream requests run under: it fires when the client leaves, or
 * when the current attempt's deadline passes. One controller per call in the common case (a
 * second one only after a deadline fired and the call fails over), which keeps AbortController
 * and listener churn off the hot path. The deadline's error carries an undici timeout code, so
 * it is classified as a timeout like undici's own.
 */
export class UpstreamSignal {
  private controller = new AbortController();
  private timer?: NodeJS.Timeout;
  /** The client went away (rather than a deadline passing). */
  clientGone = false;

  constructor(reply: FastifyReply) {
    reply.raw.once('close', () => {
      if (reply.raw.writableFinished) return;
      this.clientGone = true;
      this.clear();
      this.controller.abort(new Error('client closed the connection'));
    });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** After a deadline aborted the signal: a fresh one for what comes next (park, next attempt). */
  renew(): void {
    if (this.controller.signal.aborted && !this.clientGone) this.controller = new AbortController();
  }

  /** Aborts after `ms` (0 = never) with `message`; replaces the previous deadline. */
  arm(ms: number, message: string): void {
    this.clear();
    this.renew();
    if (!(ms > 0)) return;
    const controller = this.controller;
    this.timer = setTimeout(() => {
      controller.abort(Object.assign(new Error(message), { code: 'UND_ERR_HEADERS_TIMEOUT' }));
    }, ms);
  }

  /** The deadline was met (e.g. the first byte arrived) or the attempt is over. */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
