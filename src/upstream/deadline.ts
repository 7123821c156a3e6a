import type { FastifyReply } from 'fastify';
import type { AbortSignalLike } from '../scheduler/index.ts';

/**
 * An abort signal with what undici and the scheduler use of AbortSignal (`aborted`, `reason`,
 * abort listeners). Not an AbortController: on Node 20 each of those gets a hidden class of its
 * own, ~0.8 KB of old space per call, which was a large part of the GC the gateway caused.
 * Listeners run once, in order; one that throws is reported like an EventTarget listener's
 * (an uncaught exception), without keeping the others from running.
 */
class CallAbort implements AbortSignalLike {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] = [];

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners.indexOf(listener);
    if (at !== -1) this.listeners.splice(at, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) {
      try {
        listener();
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}

/**
 * The abort signal a call's upstream requests run under: it fires when the client leaves, or
 * when the current attempt's deadline passes. One per call in the common case (a second one
 * only after a deadline fired and the call fails over). The deadline's error carries an undici timeout code, so
 * it is classified as a timeout like undici's own.
 */
export class UpstreamSignal {
  private controller = new CallAbort();
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

  get signal(): AbortSignalLike {
    return this.controller;
  }

  /** After a deadline aborted the signal: a fresh one for what comes next (park, next attempt). */
  renew(): void {
    if (this.controller.aborted && !this.clientGone) this.controller = new CallAbort();
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
