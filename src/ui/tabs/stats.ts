/**
 * Statistics: calls, errors, tokens, cost, p50/p95 duration and ttft per backend, model,
 * source and day (or hour, for the last 24 h) over a range — 24 h, 7 d, 30 d or custom UTC
 * days — with bars per group, time-series charts (uPlot, public/stats.js) and the prompt-cache
 * split: cached / written / fresh, and the calls whose backend never reports cache use counted
 * as "no cache reporting", never as misses. Read from the call log's rollup
 * (stats/calls-rollup.ts), so a 30-day view of 100,000 calls renders in a few milliseconds.
 * In cluster mode it names the instance shown, and `?instances=all` sums every alive instance's.
 */
import type { FastifyInstance } from 'fastify';
import { DAY_MS } from '../../stats/period.ts';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';
import { MAX_CUSTOM_DAYS, parseStatsQuery, PRESETS, statsView, type StatsRange } from '../stats-model.ts';

export async function statsTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  app.get('/ui/stats', async (req, reply) => {
    const now = Date.now();
    const { input, range, errors } = parseStatsQuery(req.query, now);
    // cluster mode: this instance's call log, or (`instances=all`) every alive instance's summed
    const cluster = ctx.services.cluster;
    const all = cluster !== undefined && (req.query as Record<string, unknown>).instances === 'all';
    const summed = all ? await cluster.sum(range) : undefined;
    const summary = summed?.summary ?? (await ctx.services.callLog.summary(range));
    const view = statsView(summary);
    const custom = input.range === 'custom';
    return renderPage(reply, 'stats', {
      title: 'Statistics',
      tab: 'stats',
      status: Object.keys(errors).length ? 400 : 200,
      errors,
      presets: PRESETS,
      input: {
        range: input.range,
        // the custom fields show the range in force when there is none typed
        since: custom ? input.since : utcDay(range.since),
        until: custom ? input.until : utcDay(range.until - 1),
      },
      maxDays: MAX_CUSTOM_DAYS,
      today: utcDay(now),
      rangeLabel: rangeLabel(range, summary.since, summary.until),
      step: summary.step,
      v: view,
      cluster: cluster && { instanceId: cluster.instanceId, all, instances: summed?.instances ?? null },
    });
  });
}

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function rangeLabel(range: StatsRange, since: number, until: number): string {
  if (range.step === 'hour') {
    const t = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
    return `${t(since)} – ${t(until)} UTC, per hour`;
  }
  const days = Math.round((until - since) / DAY_MS);
  const first = utcDay(since);
  const last = utcDay(until - 1);
  return `${first === last ? first : `${first} – ${last}`} UTC (${days} day${days === 1 ? '' : 's'}), per day`;
}
