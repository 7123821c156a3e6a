/**
 * What the Playground page needs from the server: per generation alias, the parameters its
 * workflow takes (with the workflow's own value as a hint) and its file slots (reference
 * images, audio, video), read through the compiler's own mapping of the alias's first box; and
 * the cost of a call the playground just made, read back from the call log by request id.
 * The calls themselves go from the browser to /v1 like any client's.
 */
import { writeJson } from '../media/compiler/index.ts';
import type { UiServices } from './services.ts';
import { effectiveMapping, isImageLoaderClass, isLink, type GenerationAlias } from '../media/compiler/index.ts';
import type { CallRow } from '../stats/call-log.ts';
import { fmt } from './format.ts';

export interface AliasParam {
  name: string;
  /** The workflow's value, as JSON text (a hint; empty when it is a link or too long). */
  hint: string;
  /** The value as JSON text for the params box (its default). */
  json: string;
}

export interface AliasSlot {
  param: string;
  /** What the file input accepts. */
  accept: string;
  kind: 'image' | 'mask' | 'audio' | 'video';
}

export interface AliasInfo {
  name: string;
  /** A stable id fragment for element ids (the name may hold anything). */
  key: string;
  backends: string[];
  params: AliasParam[];
  slots: AliasSlot[];
  /** `node.field` pinned on the first box: no request sets them. */
  pinned: string[];
}

const cache = new WeakMap<GenerationAlias, { info: unknown; value: Omit<AliasInfo, 'name' | 'key' | 'backends'> }>();

export function playgroundAliases(services: UiServices): AliasInfo[] {
  return services.generations.names().map((name, i) => {
    const model = services.generations.get(name)!;
    const first = model.candidates[0];
    return {
      name,
      key: `a${i}`,
      backends: model.candidates.map((c) => c.backend),
      ...aliasShape(services, first.backend, first.alias),
    };
  });
}

function aliasShape(
  services: UiServices,
  backend: string,
  alias: GenerationAlias,
): Omit<AliasInfo, 'name' | 'key' | 'backends'> {
  const info = services.comfy.objectInfo(backend);
  const hit = cache.get(alias);
  if (hit && hit.info === info) return hit.value;
  const resolved = effectiveMapping(alias, info);
  const mapping = resolved.ok ? resolved.mapping : {};
  const pinnedKeys = new Set((alias.fixed ?? []).map((p) => `${p.node}\u0000${p.field}`));
  const params: AliasParam[] = [];
  const slots: AliasSlot[] = [];
  for (const [param, entry] of Object.entries(mapping)) {
    const node = alias.workflow[entry.node];
    if (!node || pinnedKeys.has(`${entry.node}\u0000${entry.field}`)) continue;
    const cls = node.class_type;
    if (isImageLoaderClass(cls)) {
      const mask = param === 'mask' || cls.includes('LoadImageMask');
      slots.push({ param, accept: 'image/*', kind: mask ? 'mask' : 'image' });
      continue;
    }
    if (/Load(Audio|Video)/.test(cls)) {
      const kind = cls.includes('Audio') ? 'audio' : 'video';
      slots.push({ param, accept: `${kind}/*`, kind });
      continue;
    }
    if (param === 'prompt') continue; // the prompt box
    const value = node.inputs[entry.field];
    const json = value === undefined || isLink(value) ? '' : writeJson(value);
    params.push({
      name: param,
      json: json.length > 200 ? '' : json,
      hint: json.length > 60 ? `${json.slice(0, 60)}…` : json,
    });
  }
  params.sort((a, b) => a.name.localeCompare(b.name));
  const value = { params, slots, pinned: (alias.fixed ?? []).map((p) => `${p.node}.${p.field}`) };
  cache.set(alias, { info, value });
  return value;
}

const REQUEST_ID_RE = /^[\w.:-]{1,128}$/;
/** How far back a lookup reads (the playground asks right after its call ended). */
const LOOKBACK_MS = 10 * 60_000;

/** The playground's look at its call's row: the fields it shows (`cost_usd` is what was spent), none when not found. */
export type CallSummary = { found: boolean; cost?: string; duration?: string } & Partial<
  Pick<
    CallRow,
    | 'id'
    | 'backend'
    | 'model'
    | 'status'
    | 'prompt_tokens'
    | 'completion_tokens'
    | 'cached_tokens'
    | 'cost_usd'
    | 'paid'
    | 'usage_estimated'
    | 'reasoning'
  >
>;

export function validRequestId(value: unknown): value is string {
  return typeof value === 'string' && REQUEST_ID_RE.test(value);
}

/** The call-log row of one request (newest calls only, through the time index), for its cost. */
export function callSummary(
  services: UiServices,
  requestId: string,
  since: number | undefined,
  now = Date.now(),
): CallSummary {
  const from =
    since !== undefined && Number.isFinite(since) ? Math.max(since - 5_000, now - LOOKBACK_MS) : now - LOOKBACK_MS;
  const row: CallRow | undefined = services.callLog
    .recent({ since: from, limit: 1_000 })
    .find((r) => r.request_id === requestId);
  if (!row) return { found: false };
  const spent = row.paid ? (row.upstream_cost_usd ?? row.cost_usd) : 0;
  return {
    found: true,
    id: row.id,
    backend: row.backend,
    model: row.model,
    status: row.status,
    prompt_tokens: row.prompt_tokens,
    completion_tokens: row.completion_tokens,
    cached_tokens: row.cached_tokens,
    cost_usd: spent,
    cost: row.paid ? fmt.usd(spent) : '$0 (free backend)',
    paid: row.paid,
    usage_estimated: row.usage_estimated,
    duration: fmt.duration(row.duration_ms),
    reasoning: row.reasoning,
  };
}
