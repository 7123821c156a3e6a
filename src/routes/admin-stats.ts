import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest } from '../errors.ts';
import type { AggregateGroup, CallLog } from '../stats/call-log.ts';
import type { PaidBudgetStatus } from '../stats/paid-budget.ts';

export interface AdminStatsOptions {
  callLog: CallLog;
  /** `paid_budget_usd_month` and what paid backends spent of it this UTC month. */
  paidBudget?: () => PaidBudgetStatus;
  requireAdmin: (req: FastifyRequest) => void;
}

const GROUPS: readonly AggregateGroup[] = ['backend', 'model', 'source', 'day'];
const CALLS_KEYS = ['limit', 'source', 'backend', 'model', 'status', 'since', 'until', 'before_id'] as const;
const STATS_KEYS = ['group', 'since', 'until'] as const;

/**
 * The call log for the console: `GET /admin/api/calls` (recent rows with filters),
 * `GET /admin/api/stats?group=` (aggregates) and `GET /admin/api/paid-budget` (the month's
 * paid spend against `paid_budget_usd_month`). Admin only. Every query parameter is known and
 * given once as a plain string; anything else (`?source=a&source=b`, `?since[x]=1`, a typo)
 * is a 400 naming it in `param`.
 */
export async function adminStatsRoutes(app: FastifyInstance, opts: AdminStatsOptions): Promise<void> {
  const { callLog } = opts;
  app.addHook('onRequest', async (req) => opts.requireAdmin(req));

  app.get('/admin/api/calls', async (req) => {
    const q = singleStrings(req.query, CALLS_KEYS);
    return {
      data: callLog.recent({
        limit: optionalInt(q.limit, 'limit', 1, 1000),
        source: q.source || undefined,
        backend: q.backend || undefined,
        model: q.model || undefined,
        status: optionalInt(q.status, 'status', 100, 599),
        since: optionalTime(q.since, 'since'),
        until: optionalTime(q.until, 'until'),
        beforeId: optionalInt(q.before_id, 'before_id', 1, Number.MAX_SAFE_INTEGER),
      }),
    };
  });

  app.get('/admin/api/stats', async (req) => {
    const q = singleStrings(req.query, STATS_KEYS);
    const group = (q.group ?? 'backend') as AggregateGroup;
    if (!GROUPS.includes(group)) throw badRequest(`\`group\` must be one of ${GROUPS.join(', ')}.`, 'group');
    return {
      group,
      data: callLog.aggregate(group, { since: optionalTime(q.since, 'since'), until: optionalTime(q.until, 'until') }),
    };
  });

  const { paidBudget } = opts;
  if (paidBudget) app.get('/admin/api/paid-budget', async () => paidBudget());
}

/**
 * The query as one string per known key. Repeated keys arrive as arrays, bracket syntax as
 * objects (or, with fastify's default parser, as keys like `since[x]`): each is a 400.
 */
function singleStrings<K extends string>(query: unknown, known: readonly K[]): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  if (query === null || typeof query !== 'object') return out;
  for (const [key, value] of Object.entries(query)) {
    const base = /^([^[\]]+)\[/.exec(key)?.[1];
    if (base !== undefined && (known as readonly string[]).includes(base)) {
      throw badRequest(`\`${base}\` must be given once, as a plain value.`, base);
    }
    if (!(known as readonly string[]).includes(key)) {
      throw badRequest(`Unknown query parameter \`${key}\`; known: ${known.join(', ')}.`, key);
    }
    if (typeof value !== 'string') throw badRequest(`\`${key}\` must be given once, as a plain value.`, key);
    out[key as K] = value;
  }
  return out;
}

function optionalInt(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw badRequest(`\`${name}\` must be an integer from ${min} to ${max}.`, name);
  return n;
}

/** Unix milliseconds or an ISO 8601 date/time. */
function optionalTime(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(n)) throw badRequest(`\`${name}\` must be unix milliseconds or an ISO 8601 time.`, name);
  return n;
}
