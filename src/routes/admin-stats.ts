import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest } from '../errors.ts';
import type { AggregateGroup, CallLog } from '../stats/call-log.ts';

export interface AdminStatsOptions {
  callLog: CallLog;
  requireAdmin: (req: FastifyRequest) => void;
}

const GROUPS: readonly AggregateGroup[] = ['backend', 'model', 'source', 'day'];

/**
 * The call log for the console: `GET /admin/api/calls` (recent rows with filters) and
 * `GET /admin/api/stats?group=` (aggregates). Admin only.
 */
export async function adminStatsRoutes(app: FastifyInstance, opts: AdminStatsOptions): Promise<void> {
  const { callLog } = opts;
  app.addHook('onRequest', async (req) => opts.requireAdmin(req));

  app.get('/admin/api/calls', async (req) => {
    const q = req.query as Record<string, string | undefined>;
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
    const q = req.query as Record<string, string | undefined>;
    const group = (q.group ?? 'backend') as AggregateGroup;
    if (!GROUPS.includes(group)) throw badRequest(`\`group\` must be one of ${GROUPS.join(', ')}.`, 'group');
    return { group, data: callLog.aggregate(group, { since: optionalTime(q.since, 'since'), until: optionalTime(q.until, 'until') }) };
  });
}

function optionalInt(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw badRequest(`\`${name}\` must be an integer from ${min} to ${max}.`, name);
  return n;
}

/** Unix milliseconds or an ISO 8601 date/time. */
function optionalTime(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(n)) throw badRequest(`\`${name}\` must be unix milliseconds or an ISO 8601 time.`, name);
  return n;
}
