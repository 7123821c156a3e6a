/**
 * One byte budget for every upload the gateway is receiving at once (`max_upload_bytes_inflight`,
 * default 512 MiB; 0 = none): the image edits, the JSON generations with their base64 files and
 * the audio transcriptions together. A request takes its declared Content-Length from the budget
 * before a byte of its body is read — or, without one, each chunk as it arrives — and gives it
 * back when its answer is sent or its connection closes. One that does not fit is refused at
 * once with 503 + Retry-After (worth retrying when the others are done); one larger than the
 * whole budget can never fit and is a 413. Per-request caps (413) stay the routes' own.
 */
import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import type { GatewayConfig } from '../config/types.ts';
import { GatewayError } from '../errors.ts';
import { formatBytes } from '../media/inputs/errors.ts';

/** Seconds a refused upload is told to wait: the uploads ahead of it are usually through by then. */
export const UPLOAD_RETRY_AFTER_S = 5;

/** The bytes held by uploads in flight, against a limit read live (0 = no limit). */
export class UploadBudget {
  private used = 0;

  constructor(private readonly limit: () => number) {}

  get inflight(): number {
    return this.used;
  }

  /** The limit in force; 0 = none. */
  get total(): number {
    const limit = this.limit();
    return Number.isFinite(limit) && limit > 0 ? limit : 0;
  }

  /** Takes `bytes` when they fit (always, with no limit); false when they do not. */
  tryTake(bytes: number): boolean {
    const total = this.total;
    if (total > 0 && this.used + bytes > total) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

/** One budget per HTTP server: every plugin of an app that takes uploads shares it; apps in one process do not. */
const budgets = new WeakMap<object, UploadBudget>();

export function uploadBudgetOf(app: FastifyInstance, config: () => GatewayConfig): UploadBudget {
  let budget = budgets.get(app.server);
  if (!budget) budgets.set(app.server, (budget = new UploadBudget(() => config().max_upload_bytes_inflight ?? 0)));
  return budget;
}

const busy = (budget: UploadBudget): GatewayError =>
  new GatewayError({
    status: 503,
    code: 'uploads_busy',
    type: 'api_error',
    retryAfter: UPLOAD_RETRY_AFTER_S,
    message:
      `Other uploads hold the gateway's upload budget (${formatBytes(budget.total)} at once, ` +
      'max_upload_bytes_inflight); retry shortly.',
  });

const requestOver = (): GatewayError =>
  new GatewayError({
    status: 499,
    code: 'client_closed',
    message: 'The request ended before its files were read.',
  });

const tooLarge = (budget: UploadBudget): GatewayError =>
  new GatewayError({
    status: 413,
    code: 'request_too_large',
    message:
      `The request is larger than the ${formatBytes(budget.total)} the gateway receives at once ` +
      '(max_upload_bytes_inflight).',
  });

/**
 * What one request holds of the budget. Taken up front from its Content-Length, or — without
 * one — chunk by chunk by whoever reads the body (`take` throws the 503 once it does not fit).
 */
export class UploadHold {
  private held = 0;
  private ended = false;

  constructor(
    private readonly budget: UploadBudget,
    private readonly upfront: boolean,
  ) {}

  /** Counts `bytes` more of the body (a no-op when its whole length was taken up front). */
  take(bytes: number): void {
    if (this.upfront) return;
    this.add(bytes);
  }

  /**
   * Counts `bytes` the request holds beyond its body (a fetched URL, decoded base64), whether
   * or not the body was taken up front; throws the 503 once they do not fit.
   */
  count(bytes: number): void {
    this.add(bytes);
  }

  /**
   * The request is over (answered, or its connection closed): everything is given back, and
   * what is still being read for it (a URL fetch outliving its client) is refused from now on
   * instead of taken — nothing would ever give it back.
   */
  end(): void {
    this.ended = true;
    this.release();
  }

  private add(bytes: number): void {
    if (this.ended) throw requestOver();
    if (!this.budget.tryTake(bytes)) throw busy(this.budget);
    this.held += bytes;
  }

  /** @internal the up-front reservation */
  hold(bytes: number): void {
    this.held += bytes;
  }

  /** Gives everything back (idempotent): the answer went out, or the body's bytes are no longer held. */
  release(): void {
    this.budget.give(this.held);
    this.held = 0;
  }
}

const holds = new WeakMap<FastifyRequest, UploadHold>();

/** The request's hold, when its route takes from the budget. */
export function uploadHoldOf(req: FastifyRequest): UploadHold | undefined {
  return holds.get(req);
}

/**
 * A route's `preParsing` hook taking the body's bytes from `budget` (see the file comment).
 * Without a Content-Length, a multipart body is metered by its reader (it reads the raw
 * request, @fastify/multipart's way: UploadHold.take per chunk), any other body here; so is a
 * compressed one, by its decoded bytes (its Content-Length says nothing of what it inflates to).
 * `refused` hears of each 503 / 413 it answers (for the call log).
 */
export function reserveUpload(
  budget: UploadBudget,
  refused?: (req: FastifyRequest, err: GatewayError) => void,
): preParsingHookHandler {
  return (req, reply, payload, done) => {
    const declared = Number(req.headers['content-length']);
    // a body decoded on its way in (content-encoding.ts put its decoder in place of the request)
    // holds what it inflates to, not its Content-Length: such a body is metered as it is decoded
    const decoded = payload !== req.raw;
    const upfront = !decoded && Number.isInteger(declared) && declared > 0;
    const hold = new UploadHold(budget, upfront);
    holds.set(req, hold);
    reply.raw.once('finish', () => {
      hold.end();
      drainUnread(req);
    });
    reply.raw.once('close', () => hold.end());
    if (upfront) {
      const total = budget.total;
      if (total > 0 && declared > total) return refuse(req, reply, tooLarge(budget), refused, done);
      if (!budget.tryTake(declared)) return refuse(req, reply, busy(budget), refused, done);
      hold.hold(declared);
      return done(null, payload);
    }
    // (req.isMultipart() is not known yet: the content-type parser runs after this hook)
    if (/^multipart\//i.test(req.headers['content-type'] ?? '')) return done(null, payload);
    const metered = new Transform({
      transform(chunk: Buffer, _enc, next) {
        try {
          hold.take(chunk.length);
        } catch (err) {
          refused?.(req, err as GatewayError);
          return next(err as Error);
        }
        next(null, chunk);
      },
    });
    payload.on('error', (err) => metered.destroy(err));
    // fastify checks a Content-Length against the bytes received, which a decoder counts for it
    Object.defineProperty(metered, 'receivedEncodedLength', {
      get: () => (payload as { receivedEncodedLength?: number }).receivedEncodedLength,
    });
    done(null, payload.pipe(metered));
  };
}

/**
 * An answer sent before its body was read to the end (a refusal mid-upload): the rest is read
 * and dropped, so the connection can carry the client's next request (a keep-alive socket with
 * half a body left in it would hang that one) and the client, still sending, gets its answer.
 */
function drainUnread(req: FastifyRequest): void {
  const raw = req.raw;
  if (raw.readableEnded || raw.destroyed) return;
  raw.unpipe();
  raw.resume();
}

function refuse(
  req: FastifyRequest,
  reply: FastifyReply,
  err: GatewayError,
  refused: ((req: FastifyRequest, err: GatewayError) => void) | undefined,
  done: (err: Error | null) => void,
): void {
  refused?.(req, err);
  // nothing of the body is kept: Node discards it once the answer is sent, so the client, still
  // sending, gets to read the 503 (closing the connection instead would break its write, EPIPE)
  done(err);
}
