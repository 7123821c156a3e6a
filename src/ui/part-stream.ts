/**
 * A live page's event stream (`/ui/events` for the dashboard, `/ui/backends/events` for the
 * backends list): once a tick the page's parts are rendered and those that changed are sent as
 * `event: part` with `{ name, html }` (public/ui.js swaps them in), a comment now and then
 * keeps proxies from closing an idle stream, and a slow reader skips ticks rather than
 * buffering. Every tick re-checks the viewer's session first (`stillViewing`): a logout, a
 * disabled or demoted user, a rotated key ends the stream (`event: session-ended` last).
 *
 * All the streams of one route share one rendering per tick (`sharedParts`): ten dashboards
 * open on ten screens cost one model build and one render a second, not ten.
 *
 * The first rendering happens before the stream is opened (a failure is an ordinary error
 * answer), and the stream counts against `max` only from the moment its `close` handler is in
 * place, so a stream that fails never keeps its slot.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { stillViewing } from './auth.ts';
import type { UiContext } from './context.ts';

export interface PartStreamOptions {
  /** The route, e.g. `/ui/events`. */
  path: string;
  /** Streams open at once; one more is refused with 503 (each costs a render per tick). */
  max: number;
  /** The parts as they are now: name → rendered HTML. */
  parts: () => Record<string, string>;
  /** Named in the log when a tick fails. */
  label: string;
  tickMs?: number;
  keepaliveMs?: number;
}

/** The last event of a stream whose viewer's session ended (public/ui.js, public/jobs.js). */
export const SESSION_ENDED = 'event: session-ended\ndata: {}\n\n';

const TICK_MS = 1_000;
const KEEPALIVE_MS = 15_000;

/** Registers the stream's route (behind the console's login, like any tab route). */
export function partStream(app: FastifyInstance, ctx: UiContext, opts: PartStreamOptions): void {
  const tickMs = opts.tickMs ?? TICK_MS;
  const keepaliveMs = opts.keepaliveMs ?? KEEPALIVE_MS;
  const streams = new Set<ServerResponse>();
  const parts = sharedParts(opts.parts, tickMs);
  // endless streams would keep the server from closing
  app.addHook('preClose', async () => {
    for (const res of streams) res.destroy();
  });

  app.get(opts.path, async (req, reply) => {
    if (streams.size >= opts.max) {
      return reply.code(503).send({
        error: { message: 'too many console streams open', type: 'api_error', param: null, code: 'too_many_streams' },
      });
    }
    const first = parts(); // throws as an ordinary 500, before anything is held
    reply.hijack();
    const res = reply.raw;
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      streams.delete(res);
    };
    res.once('close', stop);
    if (res.destroyed || res.closed) return; // gone before its close handler was in place
    streams.add(res);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
    const last = new Map<string, string>();
    let idle = 0;
    const send = (parts: Record<string, string>) => {
      let wrote = false;
      for (const [name, html] of Object.entries(parts)) {
        if (last.get(name) === html) continue;
        last.set(name, html);
        res.write(`event: part\ndata: ${JSON.stringify({ name, html })}\n\n`);
        wrote = true;
      }
      idle = wrote ? 0 : idle + tickMs;
      if (idle >= keepaliveMs) {
        res.write(': keep-alive\n\n');
        idle = 0;
      }
    };
    const tick = () => {
      if (stopped) return;
      try {
        if (!stillViewing(ctx, req)) {
          // logged out, disabled, demoted, rotated: the page's script stops and reloads (to the login)
          stop();
          res.end(SESSION_ENDED);
          return;
        }
        if (res.writableNeedDrain) return; // a slow reader skips ticks rather than buffering
        send(parts());
      } catch (err) {
        req.log.error({ err }, `${opts.label} event stream failed`);
        stop();
        res.destroy();
      }
    };
    try {
      send(first);
    } catch (err) {
      req.log.error({ err }, `${opts.label} event stream failed`);
      stop();
      res.destroy();
      return;
    }
    timer = setInterval(tick, tickMs);
  });
}

/** `build`, called at most once per `maxAgeMs` whoever asks (a tick's readers share one result). */
export function sharedParts(
  build: () => Record<string, string>,
  maxAgeMs: number,
  now: () => number = Date.now,
): () => Record<string, string> {
  let cached: { at: number; parts: Record<string, string> } | undefined;
  return () => {
    const t = now();
    // a little under a tick, so that a stream's next tick always sees a fresh build
    if (cached && t - cached.at < maxAgeMs / 2) return cached.parts;
    cached = { at: t, parts: build() };
    return cached.parts;
  };
}
