/**
 * LLM calls: the call log newest first, filtered by status (a code or a class), backend,
 * model, source and time (UTC), 50 a page (`beforeId` pages on in the log's own order), with
 * tokens, the prompt-cache split, cost, ttft, duration and reasoning; refused calls with their
 * reason, and why the scheduler chose the backend when it was not simply the best free unpaid
 * one (a word in the list, the whole route on the call's page). `/ui/calls/:id` shows one call
 * and its captured bodies. Reads only, through the call log the admin API uses (`/admin/api/calls`).
 */
import type { FastifyInstance } from 'fastify';
import { REFUSED_BACKEND } from '../../stats/record.ts';
import type { CallRow } from '../../stats/call-log.ts';
import { bodyView } from '../calls-bodies.ts';
import {
  CALLS_PAGE,
  callsQueryString,
  parseCallsQuery,
  parseUtcTime,
  utcInputValue,
  type CallsInput,
} from '../calls-query.ts';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

/** A row as the table shows it. */
export interface CallLine extends CallRow {
  refused: boolean;
  /** What the call spent (upstream-reported cost first; 0 on a free backend). */
  spent: number;
  /** Prompt tokens neither read from nor written to a cache. */
  fresh: number;
  /** Why the scheduler chose the backend, in a word for the list (`spill` of `spill: local eta 41 s > 10 s`). */
  routeWord: string | null;
}

export function callLine(c: CallRow): CallLine {
  return {
    ...c,
    refused: c.backend === REFUSED_BACKEND,
    spent: c.paid ? (c.upstream_cost_usd ?? c.cost_usd) : 0,
    fresh: Math.max(0, c.prompt_tokens - c.cached_tokens - c.cache_write_tokens),
    routeWord: c.route ? c.route.split(':')[0].trim().slice(0, 24) || null : null,
  };
}

/** Values offered in a datalist: at most this many of each. */
const SUGGESTIONS = 60;

export async function callsTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const { services } = ctx;

  app.get('/ui/calls', async (req, reply) => {
    const parsed = parseCallsQuery(req.query);
    let calls: CallLine[] = [];
    let more = false;
    if (parsed.filter) {
      const filter = { ...parsed.filter, limit: CALLS_PAGE + 1, beforeTs: undefined as number | undefined };
      if (filter.beforeId !== undefined) filter.beforeTs = services.callLog.get(filter.beforeId)?.ts;
      const rows = services.callLog.recent(filter);
      more = rows.length > CALLS_PAGE;
      calls = rows.slice(0, CALLS_PAGE).map(callLine);
    }
    const input = formValues(parsed.input);
    const filtered = ['status', 'backend', 'model', 'source', 'since', 'until'].some(
      (k) => parsed.input[k as keyof CallsInput],
    );
    return renderPage(reply, 'calls', {
      title: 'LLM calls',
      tab: 'calls',
      status: parsed.filter ? 200 : 400,
      errors: parsed.errors,
      input,
      calls,
      filtered,
      paged: Boolean(parsed.input.beforeId),
      newerHref: `/ui/calls${callsQueryString(parsed.input, { beforeId: '' })}`,
      olderHref: more
        ? `/ui/calls${callsQueryString(parsed.input, { beforeId: String(calls[calls.length - 1].id) })}`
        : null,
      // the detail keeps the list's filter and page for its way back
      detailSuffix: callsQueryString(parsed.input)
        ? `?back=${encodeURIComponent(callsQueryString(parsed.input).slice(1))}`
        : '',
      suggest: suggestions(ctx, calls),
      now: Date.now(),
    });
  });

  app.get<{ Params: { id: string } }>('/ui/calls/:id', async (req, reply) => {
    const id = /^\d{1,15}$/.test(req.params.id) ? Number(req.params.id) : 0;
    const call = id > 0 ? services.callLog.get(id) : undefined;
    if (!call) {
      return renderPage(reply, 'error', {
        title: 'No such call',
        tab: 'calls',
        status: 404,
        message: 'There is no call with this number in the log (retention may have removed it).',
      });
    }
    const bodies = call.has_bodies ? services.callLog.bodies(id) : null;
    const back = (req.query as Record<string, unknown>).back;
    // back to the list as it was filtered: only the list's own fields, re-encoded
    const backInput = parseCallsQuery(
      Object.fromEntries(new URLSearchParams(typeof back === 'string' ? back : '')),
    ).input;
    return renderPage(reply, 'call-detail', {
      title: `Call ${id}`,
      tab: 'calls',
      call: callLine(call),
      request: bodies ? bodyView(bodies.request, bodies.request_bytes) : null,
      response: bodies ? bodyView(bodies.response, bodies.response_bytes) : null,
      capturing: services.config().capture_bodies,
      bodyRetentionDays: services.config().body_retention_days,
      backHref: `/ui/calls${callsQueryString(backInput)}`,
    });
  });
}

/** The form's values: a parsed time shown as the datetime-local input wants it. */
function formValues(input: CallsInput): CallsInput {
  const time = (s: string) => {
    const t = s ? parseUtcTime(s) : undefined;
    return t === undefined ? s : utcInputValue(t);
  };
  return { ...input, since: time(input.since), until: time(input.until) };
}

/** Datalist values: backends known now and on the page, models and sources on the page and of the users. */
function suggestions(ctx: UiContext, calls: CallLine[]): { backends: string[]; models: string[]; sources: string[] } {
  const { services } = ctx;
  const uniq = (values: Iterable<string | null>) =>
    [...new Set([...values].filter((v): v is string => Boolean(v)))].slice(0, SUGGESTIONS);
  return {
    backends: uniq([...services.registry.list().map((b) => b.name), REFUSED_BACKEND, ...calls.map((c) => c.backend)]),
    models: uniq(calls.flatMap((c) => [c.requested_model, c.model])),
    sources: uniq([...calls.map((c) => c.source), ...services.users.list().map((u) => u.name)]),
  };
}
