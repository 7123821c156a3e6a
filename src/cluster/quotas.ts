/**
 * Per-user quotas across a cluster: the day's counted calls and the month's spend in Redis, so a
 * `quota_req_day` of N lets exactly N calls of the day through whichever instances they reach.
 * The same rule as a single gateway's `QuotaGate` (stats/quota.ts): a call passes while the
 * calls on record plus the calls admitted and still running are below the limit. Counted calls
 * and spend are added when a call goes on record (`counted`); the running calls are counted per
 * instance (a hash), so those of an instance that died stop counting once its heartbeat ends.
 * The call log itself stays per instance.
 */
import type { Redis } from 'ioredis';
import type { DayUsage } from '../store/calls-repo.ts';
import { DAY_MS, startOfNextUtcMonth, utcDayNumber } from '../stats/period.ts';
import {
  COST_EPSILON_USD,
  dayQuotaRefusal,
  monthQuotaRefusal,
  type Admission,
  type QuotaUser,
} from '../stats/quota.ts';
import { LuaScript } from './lua-script.ts';
import type { ClusterNode } from './node.ts';

/**
 * KEYS: used (the day's counted calls), running (instance → calls admitted), spent (the month's
 * USD), alive. ARGV: day limit (0 = none), month limit (0 = none), has unpaid ('1'/'0'), instance,
 * now, expiry of the day's keys, epsilon. Returns {1} or {0, 'day'|'month', used or spent}.
 */
const ADMIT = `
local now = tonumber(ARGV[5])
local dayLimit = tonumber(ARGV[1])
if dayLimit > 0 then
  local used = tonumber(redis.call('GET', KEYS[1]) or '0')
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    local alive = redis.call('ZSCORE', KEYS[4], all[i])
    if alive and tonumber(alive) >= now then used = used + tonumber(all[i + 1])
    else redis.call('HDEL', KEYS[2], all[i]) end
  end
  if used >= dayLimit then return {0, 'day', tostring(used)} end
end
local monthLimit = tonumber(ARGV[2])
if ARGV[3] == '0' and monthLimit > 0 then
  local spent = tonumber(redis.call('GET', KEYS[3]) or '0')
  if spent >= monthLimit - tonumber(ARGV[7]) then return {0, 'month', tostring(spent)} end
end
redis.call('HINCRBY', KEYS[2], ARGV[4], 1)
redis.call('PEXPIREAT', KEYS[2], ARGV[6])
return {1, '', '0'}
`;

const admitScript = new LuaScript(ADMIT);

/** Thrown by `admit` when Redis does not answer: the call gets a 503. */
export class QuotaStoreUnreachable extends Error {}

export class ClusterQuotas {
  private readonly redis: Redis;

  constructor(private readonly node: ClusterNode) {
    this.redis = node.redis;
  }

  /** Admits a call of `user` at `now`, counting it as running here until `done()`, or refuses it. */
  async admit(user: QuotaUser, now: number, hasUnpaid: boolean): Promise<Admission> {
    const day = utcDayNumber(now);
    const dayLimit = limitOf(user.quota_req_day);
    const monthLimit = limitOf(user.quota_cost_month);
    if (dayLimit === 0 && (monthLimit === 0 || hasUnpaid)) return { ok: true, done: () => {} };
    const running = this.key(user.id, 'running', day);
    let verdict: [number, string, string];
    try {
      const keys = [this.key(user.id, 'used', day), running, this.monthKey(user.id, now), this.node.key('alive')];
      verdict = await admitScript.run<[number, string, string]>(this.redis, keys, [
        dayLimit,
        monthLimit,
        hasUnpaid ? '1' : '0',
        this.node.instanceId,
        now,
        (day + 2) * DAY_MS,
        COST_EPSILON_USD,
      ]);
    } catch {
      throw new QuotaStoreUnreachable('the cluster store (Redis) is unreachable');
    }
    if (verdict[0] === 1) return { ok: true, done: this.doneOnce(running) };
    return verdict[1] === 'day'
      ? dayQuotaRefusal(dayLimit, now)
      : monthQuotaRefusal(Number(verdict[2]), monthLimit, now);
  }

  /** A call went on record: its requests count on its day, its spend on its month (before its `done`). */
  counted(u: DayUsage): void {
    if (!this.node.connected) return;
    const at = u.day * DAY_MS;
    const pipe = this.redis.pipeline();
    const used = this.key(u.user_id, 'used', u.day);
    pipe.incrby(used, u.requests);
    pipe.pexpireat(used, (u.day + 2) * DAY_MS);
    if (u.cost > 0) {
      const spent = this.monthKey(u.user_id, at);
      pipe.incrbyfloat(spent, u.cost);
      pipe.pexpireat(spent, startOfNextUtcMonth(at) + DAY_MS);
    }
    void pipe.exec().catch(() => {});
  }

  private doneOnce(running: string): () => void {
    let finished = false;
    return () => {
      if (finished) return;
      finished = true;
      if (this.node.connected) void this.redis.hincrby(running, this.node.instanceId, -1).catch(() => {});
    };
  }

  private key(userId: number, what: string, day: number): string {
    return this.node.key('quota', String(userId), what, String(day));
  }

  private monthKey(userId: number, at: number): string {
    const d = new Date(at);
    return this.node.key('quota', String(userId), 'spent', `${d.getUTCFullYear()}-${d.getUTCMonth() + 1}`);
  }
}

function limitOf(v: number | null): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0;
}

/** The quota gate of a gateway's calls: the call log's own, or, in a cluster, the shared counters. */
export function quotaAdmission(
  cluster: ClusterNode | undefined,
  callLog: { quotas: { admit(user: QuotaUser, now: number, hasUnpaid: boolean): Admission }; onUsage?: unknown },
): (user: QuotaUser, now: number, hasUnpaid: boolean) => Admission | Promise<Admission> {
  if (!cluster) return (user, now, hasUnpaid) => callLog.quotas.admit(user, now, hasUnpaid);
  const shared = new ClusterQuotas(cluster);
  callLog.onUsage = (usage: DayUsage) => shared.counted(usage);
  return (user, now, hasUnpaid) => shared.admit(user, now, hasUnpaid);
}
