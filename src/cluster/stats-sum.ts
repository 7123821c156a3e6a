/**
 * The Statistics tab over every instance: each instance's call log stays its own; on request
 * (`/ui/stats?instances=all`) this instance asks every alive peer for its summary of the same
 * range (`GET /cluster/api/stats-summary`, peers only: it needs the cluster's mark) and adds
 * them to its own. Counts, tokens and costs add; percentiles do not, so the sum leaves them
 * out (null) and the page shows them per instance instead. An instance that does not answer is
 * listed as missing from the sum, never silently left out.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { cacheHitShare } from '../store/call-aggregates.ts';
import type { CallSummary, GroupStats, RollupStep, SeriesPoint } from '../stats/call-log.ts';
import type { ClusterNode } from './node.ts';
import type { Peers } from './peers.ts';

const SUMMARY_PATH = '/cluster/api/stats-summary';
const STEPS: ReadonlySet<string> = new Set<RollupStep>(['hour', 'day']);

export interface StatsRangeIn {
  since: number;
  until: number;
  step: RollupStep;
}

/** One instance's part of a sum, for the table under the cards. */
export interface InstanceStats {
  id: string;
  self: boolean;
  /** Null when it did not answer (then it is not in the sum). */
  total: GroupStats | null;
  error?: string;
}

export interface ClusterStatsView {
  readonly instanceId: string;
  /** Every alive instance's summary of `range`, summed, and each one's own totals. */
  sum(range: StatsRangeIn): Promise<{ summary: CallSummary; instances: InstanceStats[] }>;
}

const PERCENTILES = ['p50_ms', 'p95_ms', 'ttft_p50_ms', 'ttft_p95_ms'] as const;

/** `a` + `b`: every count adds, the cache share is worked out again, the percentiles are left out. */
export function addGroups<T extends GroupStats>(a: T, b: T): T {
  const out = { ...a } as Record<string, unknown>;
  for (const [k, v] of Object.entries(b)) {
    if (k === 'key' || k === 't' || k === 'cache_hit_share' || (PERCENTILES as readonly string[]).includes(k)) continue;
    if (typeof v === 'number') out[k] = ((out[k] as number | undefined) ?? 0) + v;
  }
  for (const k of PERCENTILES) out[k] = null;
  const sum = out as unknown as T;
  sum.cache_hit_share = cacheHitShare(sum.cached_tokens, sum.reporting_prompt_tokens);
  return sum;
}

function addByKey<T extends GroupStats>(lists: T[][], keyOf: (g: T) => string | number): T[] {
  const byKey = new Map<string | number, T>();
  for (const list of lists) {
    for (const g of list) {
      const k = keyOf(g);
      const had = byKey.get(k);
      byKey.set(k, had ? addGroups(had, g) : addGroups(g, {} as T));
    }
  }
  return [...byKey.values()];
}

/** Summaries of the same range added up (groups by key, most calls first; periods by start). */
export function sumSummaries(parts: CallSummary[]): CallSummary {
  const [first] = parts;
  if (!first) throw new Error('nothing to sum');
  const groups = (pick: (s: CallSummary) => GroupStats[]) =>
    addByKey(parts.map(pick), (g) => g.key).sort((x, y) => y.calls - x.calls || x.key.localeCompare(y.key));
  return {
    since: first.since,
    until: first.until,
    step: first.step,
    total: parts.slice(1).reduce((t, s) => addGroups(t, s.total), addGroups(first.total, {} as GroupStats)),
    backend: groups((s) => s.backend),
    model: groups((s) => s.model),
    source: groups((s) => s.source),
    series: addByKey<SeriesPoint>(
      parts.map((s) => s.series),
      (p) => p.t,
    ).sort((x, y) => x.t - y.t),
    // silent on every instance that saw it is not knowable from here: any instance's silent one is listed
    silentBackends: [...new Set(parts.flatMap((s) => s.silentBackends))].sort(),
  };
}

export interface ClusterStatsDeps {
  node: ClusterNode;
  peers: Peers;
  summary: (range: StatsRangeIn) => Promise<CallSummary>;
  fromPeer: (req: FastifyRequest) => boolean;
}

/** The peers' route, and the console's view of the sum. */
export function clusterStats(app: FastifyInstance, deps: ClusterStatsDeps): ClusterStatsView {
  const { node, peers } = deps;
  app.get(SUMMARY_PATH, async (req, reply) => {
    // peers only: anyone else gets the 404 of a route that is not there
    if (!deps.fromPeer(req)) return reply.code(404).send({ error: { message: 'Not found', type: 'not_found_error' } });
    const q = req.query as Record<string, unknown>;
    const since = Number(q.since);
    const until = Number(q.until);
    if (!Number.isFinite(since) || !Number.isFinite(until) || typeof q.step !== 'string' || !STEPS.has(q.step)) {
      return reply.code(400).send({ error: { message: 'since, until and step', type: 'invalid_request_error' } });
    }
    return deps.summary({ since, until, step: q.step as RollupStep });
  });
  return {
    instanceId: node.instanceId,
    async sum(range) {
      const own = await deps.summary(range);
      let alive: { id: string; url?: string }[] = [];
      try {
        alive = await node.aliveInstances();
      } catch {
        // Redis away: this instance's own figures, the peers listed as not asked
      }
      const others = alive.filter((i) => i.id !== node.instanceId);
      const answers = await Promise.all(others.map((i) => peerSummary(peers, i, range)));
      const parts = [own, ...answers.flatMap((a) => (a.summary ? [a.summary] : []))];
      const instances: InstanceStats[] = [
        { id: node.instanceId, self: true, total: own.total },
        ...answers.map((a) => ({ id: a.id, self: false, total: a.summary?.total ?? null, ...a.error })),
      ];
      // alone (no peer answered): its own summary as it is, percentiles and all
      return { summary: parts.length === 1 ? own : sumSummaries(parts), instances };
    },
  };
}

async function peerSummary(
  peers: Peers,
  peer: { id: string; url?: string },
  range: StatsRangeIn,
): Promise<{ id: string; summary?: CallSummary; error?: { error: string } }> {
  if (!peer.url) return { id: peer.id, error: { error: 'no URL advertised' } };
  const url = `${SUMMARY_PATH}?since=${range.since}&until=${range.until}&step=${range.step}`;
  try {
    const answer = await peers.send(peer.url, { method: 'GET', url, headers: {}, clientIp: '127.0.0.1' }, peer.id);
    const body = await answer.body.text();
    if (answer.statusCode !== 200) return { id: peer.id, error: { error: `answered ${answer.statusCode}` } };
    return { id: peer.id, summary: JSON.parse(body) as CallSummary };
  } catch {
    return { id: peer.id, error: { error: 'unreachable' } };
  }
}
