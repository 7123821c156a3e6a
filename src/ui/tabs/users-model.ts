/**
 * What the users tab shows: each user with the quota counters it is checked against (requests
 * this UTC day, USD this UTC month: the live QuotaGate, not a scan of the log), when it last
 * called (one indexed query per user), and the allow-list picker's choices (chat and
 * generation aliases, backends, models) with the kind of each entry. Read-only.
 */
import type { UiServices } from '../services.ts';
import { startOfUtcDay, startOfUtcMonth } from '../../stats/period.ts';
import type { User } from '../../admin/users-service.ts';

export type AllowKind = 'chat alias' | 'generation alias' | 'backend' | 'model' | 'backend/model' | 'unknown';

export interface AllowEntry {
  value: string;
  kind: AllowKind;
}

export interface AllowGroup {
  label: string;
  kind: AllowKind;
  values: string[];
}

/** One quota with its usage: `limit` null when there is none (null, or <= 0: "0 = unlimited"). */
export interface QuotaUse {
  used: number;
  limit: number | null;
  /** 0..100, in steps of 5 (the bar's CSS class). */
  step: number;
  state: 'none' | 'ok' | 'warn' | 'full';
}

export interface UserRow {
  user: User;
  requests: QuotaUse;
  cost: QuotaUse;
  inflight: number;
  lastUsed: number | null;
  allow: AllowEntry[];
}

export interface UsersModel {
  now: number;
  rows: UserRow[];
  counts: { users: number; admins: number; enabled: number; disabled: number };
  ipAliases: { ip: string; alias: string }[];
}

/** Models offered in the picker at most (a large cloud catalogue stays a usable list). */
const MAX_MODEL_CHOICES = 2_000;

export function usersModel(services: UiServices, users: User[], now = Date.now()): UsersModel {
  const kinds = allowKinds(services);
  const rows = users.map((user) => userRow(services, user, kinds, now));
  return {
    now,
    rows,
    counts: {
      users: users.length,
      admins: users.filter((u) => u.role === 'admin').length,
      enabled: users.filter((u) => u.enabled).length,
      disabled: users.filter((u) => !u.enabled).length,
    },
    ipAliases: Object.entries(services.users.ipAliases()).map(([ip, alias]) => ({ ip, alias })),
  };
}

export function userRow(services: UiServices, user: User, kinds: AllowKinds, now = Date.now()): UserRow {
  const quotas = services.quotas;
  return {
    user,
    requests: quotaUse(quotas.requestsSince(user.id, startOfUtcDay(now)), user.quota_req_day),
    cost: quotaUse(quotas.costSince(user.id, startOfUtcMonth(now)), user.quota_cost_month),
    inflight: quotas.inflight(user.id),
    lastUsed: lastUsed(services, user.id),
    allow: user.allow.map((value) => ({ value, kind: kinds.of(value) })),
  };
}

export function quotaUse(used: number, rawLimit: number | null): QuotaUse {
  const limit = rawLimit !== null && rawLimit > 0 ? rawLimit : null;
  if (limit === null) return { used, limit, step: 0, state: 'none' };
  const pct = Math.min(100, (used / limit) * 100);
  const step = used > 0 ? Math.min(100, Math.max(5, Math.ceil(pct / 5) * 5)) : 0;
  return { used, limit, step, state: used >= limit - 1e-9 ? 'full' : pct >= 80 ? 'warn' : 'ok' };
}

/** The newest call of the user on record (an indexed query), or null (never, or the call log is off). */
function lastUsed(services: UiServices, userId: number): number | null {
  return services.callLog.recent({ user_id: userId, limit: 1 })[0]?.ts ?? null;
}

export interface AllowKinds {
  groups: AllowGroup[];
  of(value: string): AllowKind;
}

/** The picker's choices, grouped, and what kind of thing an entry names right now. */
export function allowKinds(services: UiServices): AllowKinds {
  const chat = Object.keys(services.config().virtual_models ?? {}).sort(byName);
  const generation = services.generations.names().slice().sort(byName);
  const backends = services.registry.list();
  const backendNames = backends.map((b) => b.name).sort(byName);
  const models = new Set<string>();
  for (const b of backends) for (const m of b.models) models.add(m.id);
  const modelList = [...models].sort(byName).slice(0, MAX_MODEL_CHOICES);
  const sets = {
    chat: new Set(chat),
    generation: new Set(generation),
    backend: new Set(backendNames),
    model: models,
  };
  const byBackend = new Map(backends.map((b) => [b.name, b.modelsById]));
  return {
    groups: [
      { label: 'Chat aliases', kind: 'chat alias' as const, values: chat },
      { label: 'Generation aliases', kind: 'generation alias' as const, values: generation },
      { label: 'Backends (all their models)', kind: 'backend' as const, values: backendNames },
      { label: 'Models', kind: 'model' as const, values: modelList },
    ].filter((g) => g.values.length > 0),
    of(value: string): AllowKind {
      if (sets.chat.has(value)) return 'chat alias';
      if (sets.generation.has(value)) return 'generation alias';
      if (sets.backend.has(value)) return 'backend';
      if (sets.model.has(value)) return 'model';
      const slash = value.indexOf('/');
      if (slash > 0 && byBackend.get(value.slice(0, slash))?.has(value.slice(slash + 1))) return 'backend/model';
      return 'unknown';
    },
  };
}

function byName(a: string, b: string): number {
  return a.localeCompare(b, 'en');
}
