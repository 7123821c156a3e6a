/**
 * What the aliases tab shows: every chat alias and glob alias with its settings, where it
 * resolves now (through the gateway's own resolver, `gateway.catalog`), and its collisions —
 * an alias that is also a real model id (covered: the alias still reaches every backend serving
 * that id; shadowed: some backends' copy is reachable only as `<backend>/<id>`), a pattern that
 * exact aliases or served model ids take precedence over. Pure reads of live state.
 */
import type { AliasDefaults, VirtualModel } from '../../config/types.ts';
import type { SecretSettingView, SettingView } from '../../admin/config-service.ts';
import type { UiServices } from '../services.ts';
import { globMatcher, isAliasPattern } from '../../routing/aliases.ts';
import type { AliasCollision } from '../../routing/resolve.ts';
import { kindOf } from '../../backends/kinds/index.ts';

/** The settings this tab edits, in the order the page names them. */
export const ALIAS_SETTING_KEYS = ['virtual_models', 'alias_park', 'alias_defaults'] as const;
export type AliasSettingKey = (typeof ALIAS_SETTING_KEYS)[number];

export type BackendState = 'up' | 'down' | 'draining' | 'disabled' | 'missing';

export interface MappingLine {
  /** Undefined: any backend serving `model`. */
  backend?: string;
  model: string;
  /** `model` names another alias (followed like a model id). */
  alias?: boolean;
  /** Why this line routes nowhere now (undefined: it does). */
  problem?: string;
}

export interface ResolvedLine {
  backend: string;
  model: string;
  state: BackendState;
}

export interface AliasRow {
  name: string;
  pattern: boolean;
  /** Patterns: the place in the order they are tried (1 = most specific). */
  order?: number;
  target: VirtualModel;
  lines: MappingLine[];
  park?: number;
  defaults?: AliasDefaults;
  /** Where the alias resolves now (OpenAI endpoints; else /v1/messages only). */
  resolved: ResolvedLine[];
  surface: 'openai' | 'messages' | 'none';
  /** A pattern whose requests a more specific pattern takes. */
  via?: string;
  collision?: { kind: 'covered' | 'shadowed'; stillServedBy: string[]; unreachable: string[] };
  /** Patterns: exact aliases matching it (they win). */
  exactWins: string[];
  /** Patterns: model ids the fleet serves that match it (a served model wins). */
  servedWins: string[];
  /** Lowercase text the filter searches. */
  search: string;
}

export interface AliasesModel {
  aliases: AliasRow[];
  patterns: AliasRow[];
  /** Before the filter. */
  total: { aliases: number; patterns: number; collisions: number; unrouted: number };
  shown: number;
  q: string;
  parkDefault: number;
  sources: { key: AliasSettingKey; view?: SettingView }[];
}

/** The most names listed per collision or shadow before "and N more". */
export const LIST_CAP = 6;

export function stateOf(services: UiServices, backend: string): BackendState {
  const b = services.registry.get(backend);
  if (!b) return 'missing';
  if (!b.spec.enabled) return 'disabled';
  if (b.draining) return 'draining';
  return b.healthy ? 'up' : 'down';
}

/** Why one `backend → model` line routes nowhere now. */
function lineProblem(services: UiServices, backend: string, model: string): string | undefined {
  const b = services.registry.get(backend);
  if (!b) return 'no such backend';
  if (!b.spec.enabled) return 'backend disabled';
  if (kindOf(b.spec).isMedia) return 'a ComfyUI backend serves no chat models';
  if (!b.modelsById.has(model)) return b.healthy ? 'not listed by this backend' : 'backend down';
  return undefined;
}

function linesOf(services: UiServices, target: VirtualModel, exact: Record<string, VirtualModel>): MappingLine[] {
  if (typeof target === 'string') {
    if (Object.hasOwn(exact, target)) return [{ model: target, alias: true }];
    const served = services.registry.backendsServing(target).length > 0 || pinServed(services, target);
    return [{ model: target, ...(served ? {} : { problem: 'no backend serves this id now' }) }];
  }
  return Object.entries(target).map(([backend, model]) => {
    const problem = lineProblem(services, backend, model);
    return { backend, model, ...(problem ? { problem } : {}) };
  });
}

/** `<backend>/<model>` naming a backend that lists the model. */
function pinServed(services: UiServices, id: string): boolean {
  const slash = id.indexOf('/');
  return slash > 0 && !!services.registry.get(id.slice(0, slash))?.modelsById.has(id.slice(slash + 1));
}

/**
 * A name only this pattern's wildcards can produce: the control character U+0001 in place of
 * each `*` and `?` is in no alias and no model id, so the real resolver answers for the pattern
 * itself (or for a more specific pattern that also matches it).
 */
function probeName(pattern: string): string {
  return pattern.replace(/[*?]/g, '\u0001');
}

function resolveNow(
  services: UiServices,
  requested: string,
): { resolved: ResolvedLine[]; surface: AliasRow['surface']; alias?: string } {
  for (const surface of ['openai', 'messages'] as const) {
    const r = services.catalog.resolve(requested, surface);
    if (r && r.candidates.length) {
      return {
        surface,
        alias: r.alias,
        resolved: r.candidates.map((c) => ({
          backend: c.backend,
          model: c.model,
          state: stateOf(services, c.backend),
        })),
      };
    }
  }
  return { resolved: [], surface: 'none' };
}

function collisionOf(c: AliasCollision | undefined): AliasRow['collision'] {
  if (!c) return undefined;
  return {
    kind: c.unreachable.length ? 'shadowed' : 'covered',
    stillServedBy: c.stillServedBy,
    unreachable: c.unreachable,
  };
}

function searchText(row: Omit<AliasRow, 'search'>): string {
  const parts = [
    row.name,
    ...row.lines.flatMap((l) => [l.backend ?? '', l.model]),
    ...row.resolved.flatMap((r) => [r.backend, r.model]),
  ];
  if (row.collision) parts.push(row.collision.kind, 'collision');
  if (row.exactWins.length || row.servedWins.length) parts.push('shadowed');
  if (row.surface === 'none') parts.push('unrouted');
  return parts.join(' ').toLowerCase();
}

export function aliasesModel(services: UiServices, q: string): AliasesModel {
  const cfg = services.config();
  const table = cfg.virtual_models;
  const exact: Record<string, VirtualModel> = {};
  for (const [k, v] of Object.entries(table)) if (!isAliasPattern(k)) exact[k] = v;
  const collisions = new Map(services.catalog.collisions().map((c) => [c.alias, c]));
  const order = new Map(services.catalog.patterns().map((p, i) => [p.pattern, i + 1]));
  const servedIds = [
    ...new Set(
      services.registry
        .list()
        .filter((b) => b.spec.enabled && !kindOf(b.spec).isMedia)
        .flatMap((b) => b.models.map((m) => m.id)),
    ),
  ];

  const rows: AliasRow[] = Object.entries(table).map(([name, target]) => {
    const pattern = isAliasPattern(name);
    const now = resolveNow(services, pattern ? probeName(name) : name);
    const matcher = pattern ? globMatcher(name) : undefined;
    const base: Omit<AliasRow, 'search'> = {
      name,
      pattern,
      target,
      lines: linesOf(services, target, exact),
      resolved: now.resolved,
      surface: now.surface,
      exactWins: matcher ? Object.keys(exact).filter((k) => matcher.test(k)) : [],
      servedWins: matcher ? servedIds.filter((id) => matcher.test(id)) : [],
    };
    if (pattern) base.order = order.get(name);
    if (pattern && now.alias && now.alias !== name) base.via = now.alias;
    if (Object.hasOwn(cfg.alias_park, name)) base.park = cfg.alias_park[name];
    if (Object.hasOwn(cfg.alias_defaults, name)) base.defaults = cfg.alias_defaults[name];
    const collision = pattern ? undefined : collisionOf(collisions.get(name));
    if (collision) base.collision = collision;
    return { ...base, search: searchText(base) };
  });

  const needle = q.trim().toLowerCase();
  const shown = needle ? rows.filter((r) => r.search.includes(needle)) : rows;
  const views = services.admin.settingsView();
  const viewOf = (key: string) =>
    views.find((v): v is SettingView => v.key === key && !(v as SettingView | SecretSettingView).secret);
  return {
    aliases: shown.filter((r) => !r.pattern),
    patterns: shown.filter((r) => r.pattern).sort((a, b) => (a.order ?? 0) - (b.order ?? 0)),
    total: {
      aliases: rows.filter((r) => !r.pattern).length,
      patterns: rows.filter((r) => r.pattern).length,
      collisions: rows.filter((r) => r.collision).length,
      unrouted: rows.filter((r) => r.surface === 'none').length,
    },
    shown: shown.length,
    q: q.trim(),
    parkDefault: cfg.park_timeout_s,
    sources: ALIAS_SETTING_KEYS.map((key) => ({ key, view: viewOf(key) })),
  };
}

/** The sampling defaults as one short line (`temperature 0.7 · top_k 20`). */
export function samplingSummary(sampling: Record<string, unknown> | undefined): string {
  if (!sampling) return '';
  return Object.entries(sampling)
    .map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' · ');
}
