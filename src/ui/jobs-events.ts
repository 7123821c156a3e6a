/**
 * `GET /ui/jobs/:id/events`: one job's live events for its console page, as SSE
 * (`event: <type>`), re-emitted from the media service's subscription: queued (position),
 * running (backend), progress (0–100, node, step), preview (a console URL), and a terminal
 * event that carries the page's parts re-rendered (state, summary, outputs) for public/jobs.js
 * to swap in: one rendering of each part, the template's. The stream ends after it, or when
 * the viewer's session does (re-checked every second: `event: session-ended`).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { JobEvent, JobView } from '../media/service-types.ts';
import type { UiContext } from './context.ts';
import { CONSOLE_CALLER } from './dashboard-model.ts';
import { jobDetailModel } from './jobs-model.ts';
import { renderPartial } from './partials.ts';
import { SESSION_ENDED } from './part-stream.ts';
import { stillViewing } from './auth.ts';

export interface JobStreams {
  open: number;
  /** Streams open at once; one more is refused. */
  max: number;
  live: Set<ServerResponse>;
}

/** The parts of the detail page a stream may re-render. */
export const JOB_PARTS = ['jobs-state', 'jobs-summary', 'jobs-outputs'] as const;

const KEEPALIVE_MS = 15_000;
/** How often an open stream re-checks its viewer's session. */
const CHECK_MS = 1_000;
/** Bytes a follower may leave unread before its stream is dropped. */
const BUFFER_BYTES = 1024 * 1024;
const TERMINAL: ReadonlySet<string> = new Set(['done', 'failed', 'cancelled']);

export function jobParts(ctx: UiContext, job: JobView, names: readonly string[] = JOB_PARTS): Record<string, string> {
  const d = jobDetailModel(ctx.services, job);
  return Object.fromEntries(names.map((name) => [name, renderPartial(name, { d, csrf: '' })]));
}

/** What the page gets for one service event (never a /v1 URL: the page has no key). */
function pageEvent(ctx: UiContext, id: string, event: JobEvent, withSummary: boolean): Record<string, unknown> {
  switch (event.type) {
    case 'preview':
      return { type: 'preview', url: `/ui/jobs/${id}/preview` };
    case 'done':
    case 'failed':
    case 'cancelled':
      return {
        type: event.type,
        status: event.job.status,
        progress: event.job.progress,
        parts: jobParts(ctx, event.job),
      };
    case 'progress': {
      if (!withSummary) return { ...event };
      const view = ctx.services.media.view(id, CONSOLE_CALLER);
      return { ...event, ...(view ? { parts: jobParts(ctx, view, ['jobs-summary']) } : {}) };
    }
    default:
      return { ...event };
  }
}

export function followJobEvents(
  ctx: UiContext,
  streams: JobStreams,
  req: FastifyRequest,
  reply: FastifyReply,
  id: string,
): FastifyReply | void {
  if (streams.open >= streams.max) {
    return reply.code(503).send({
      error: { message: 'too many console streams open', type: 'api_error', param: null, code: 'too_many_streams' },
    });
  }
  // subscribe may call back at once (the current state, a finished job's end): hold those
  // until the answer is known to be a stream and not a 404
  const early: JobEvent[] = [];
  let res: ServerResponse | undefined;
  let ended = false;
  let summaryDue = true;
  let keepalive: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  const stop = () => {
    if (ended) return;
    ended = true;
    clearInterval(keepalive);
    unsubscribe?.();
    if (res) {
      streams.open--;
      streams.live.delete(res);
    }
  };
  let lastWrite = Date.now();
  const write = (event: JobEvent) => {
    if (ended) return;
    if (!res) return void early.push(event);
    if (res.destroyed) return stop();
    if (event.type === 'running') summaryDue = true;
    const withSummary = event.type === 'progress' && summaryDue;
    if (withSummary) summaryDue = false;
    let data: Record<string, unknown>;
    try {
      data = pageEvent(ctx, id, event, withSummary);
    } catch (err) {
      req.log.error({ err, job: id }, 'console job event failed');
      stop();
      res.destroy();
      return;
    }
    res.write(`event: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`);
    lastWrite = Date.now();
    if (res.writableLength > BUFFER_BYTES) {
      stop();
      res.destroy();
    } else if (TERMINAL.has(event.type)) {
      stop();
      res.end();
    }
  };
  unsubscribe = ctx.services.media.subscribe(id, CONSOLE_CALLER, write);
  if (!unsubscribe) throw Object.assign(new Error('There is no such job (or it expired).'), { statusCode: 404 });
  reply.hijack();
  res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    connection: 'keep-alive',
    'x-content-type-options': 'nosniff',
  });
  streams.open++;
  streams.live.add(res);
  res.once('close', stop);
  for (const event of early.splice(0)) write(event);
  if (!ended) {
    // each second: the viewer's session re-checked (a logout, a disabled or demoted user, a
    // rotated key ends the stream), and a comment when it has been quiet for a while
    keepalive = setInterval(() => {
      if (!res || res.destroyed) return stop();
      if (!stillViewing(ctx, req)) {
        stop();
        res.end(SESSION_ENDED);
      } else if (Date.now() - lastWrite >= KEEPALIVE_MS) {
        res.write(': keep-alive\n\n');
        lastWrite = Date.now();
      }
    }, CHECK_MS);
    keepalive.unref();
  }
}
