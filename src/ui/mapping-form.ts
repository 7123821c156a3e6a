/**
 * The mapping editor's state as its form carries it (strings, index-numbered rows), read from
 * a POST, built from a stored alias or from a freshly pasted workflow, and turned into the
 * `image_models.<alias>` entries config.yaml would hold. Only reading and shaping happen here:
 * whether the entries are valid is config.yaml's validation (ConfigService.setSetting) and the
 * compiler's (validateAlias, through the generation catalog); their problems come back to
 * mapping-problems.ts only to be placed next to the field they are about (key path → form field).
 */
import { parseExactJson } from '../wire/exact-json.ts';
import { prettyJson } from './format.ts';
import { many, one, type FormBody } from './form-values.ts';
import { isDeepStrictEqual } from 'node:util';
import { workflowShapeProblem } from '../config/media-schema.ts';
import type { ImageModelEntry } from '../config/types.ts';
import {
  effectiveMapping,
  suggestMapping,
  type Mapping,
  type ObjectInfo,
  type OnEmpty,
  type Pin,
  type Workflow,
} from '../media/compiler/index.ts';
import { resolveNode } from '../media/compiler/graph.ts';
import { classInfo, inputDecl } from '../media/compiler/object-info.ts';
import { coerceValue } from '../media/compiler/values.ts';

export type { FormBody };

export const ON_EMPTY_MODES: readonly OnEmpty[] = ['placeholder', 'required', 'disable'];
/** Rows read from one form at most (a forged form cannot make the page huge). */
const MAX_ROWS = 300;

export interface MappingRow {
  param: string;
  node: string;
  field: string;
  mode: '' | OnEmpty;
}

export interface PinRow {
  node: string;
  field: string;
  value: string;
}

/** One comfyui backend of the fleet, as a candidate of the alias or not. */
export interface BackendState {
  name: string;
  use: boolean;
  order: number;
  pins: PinRow[];
  bypass: string;
  output: string;
}

export interface SampleState {
  backend: string;
  /** Sample request parameters by name, as typed (blank = not sent). */
  values: Record<string, string>;
  /** Image slots the dry run sends a file for. */
  images: string[];
  /** More parameters as a JSON object (`lora_1`, …). */
  extra: string;
}

export interface EditorState {
  /** The alias being edited ('' for a new one). */
  original: string;
  alias: string;
  workflowText: string;
  mapping: MappingRow[];
  backends: BackendState[];
  sample: SampleState;
}

/** Where each entry (and each of its pins) came from in the form, to place problems. */
export interface EntryIndex {
  /** entries[i] is backends[backendAt[i]] of the state. */
  backendAt: number[];
  /** entries[i].fixed[j] is pin row pinAt[i][j] of that backend. */
  pinAt: number[][];
}

export type ParsedWorkflow = { ok: true; workflow: Workflow } | { ok: false; message: string };

/** A pasted or uploaded workflow: JSON, and ComfyUI's API format (the UI format is refused with its export hint). */
export function parseWorkflow(text: string): ParsedWorkflow {
  if (text.trim() === '')
    return { ok: false, message: 'Paste a workflow in the API format, or choose its .json file.' };
  let value: unknown;
  try {
    value = parseExactJson(text); // a baked-in seed beyond 2^53 stays exact
  } catch (err) {
    return { ok: false, message: `This is not JSON: ${(err as Error).message}` };
  }
  const problem = workflowShapeProblem(value);
  if (problem) {
    const ui = /UI format/.test(problem);
    return {
      ok: false,
      message: ui
        ? `This is ComfyUI's UI format (the editor's save file). In ComfyUI use Workflow → Export ` +
          `(API) and paste that file.`
        : `This is not a ComfyUI API workflow: ${problem}.`,
    };
  }
  return { ok: true, workflow: value as Workflow };
}

function count(body: FormBody, key: string): number {
  const n = Number.parseInt(one(body, key), 10);
  return Number.isFinite(n) && n > 0 ? Math.min(n, MAX_ROWS) : 0;
}

function modeOf(text: string): '' | OnEmpty {
  return (ON_EMPTY_MODES as readonly string[]).includes(text) ? (text as OnEmpty) : '';
}

/** The editor state a POST carries; backends not in `comfyBackends` are ignored. */
export function readState(body: FormBody, comfyBackends: readonly string[]): EditorState {
  const mapping: MappingRow[] = [];
  for (let k = 0; k < count(body, 'm_count'); k++) {
    const param = one(body, `m${k}_param`).trim();
    if (param === '') continue; // a cleared name removes the row
    mapping.push({
      param,
      node: one(body, `m${k}_node`),
      field: one(body, `m${k}_field`),
      mode: modeOf(one(body, `m${k}_mode`)),
    });
  }
  const posted = new Map<string, BackendState>();
  for (let bi = 0; bi < count(body, 'b_count'); bi++) {
    const name = one(body, `b${bi}_name`);
    if (!comfyBackends.includes(name) || posted.has(name)) continue;
    const pins: PinRow[] = [];
    for (let j = 0; j < count(body, `b${bi}_p_count`); j++) {
      const node = one(body, `b${bi}_p${j}_node`);
      if (node === '') continue; // no node: no pin
      pins.push({ node, field: one(body, `b${bi}_p${j}_field`), value: one(body, `b${bi}_p${j}_value`) });
    }
    const order = Number.parseInt(one(body, `b${bi}_order`), 10);
    posted.set(name, {
      name,
      use: one(body, `b${bi}_use`) === 'on',
      order: Number.isFinite(order) ? order : bi + 1,
      pins,
      bypass: one(body, `b${bi}_bypass`),
      output: one(body, `b${bi}_output`),
    });
  }
  const backends = comfyBackends.map((name, i) => posted.get(name) ?? blankBackend(name, i + 1, false));
  const values: Record<string, string> = {};
  for (let k = 0; k < count(body, 's_count'); k++) {
    const name = one(body, `s${k}_name`);
    const value = one(body, `s${k}_value`);
    if (name !== '' && value.trim() !== '') values[name] = value;
  }
  return {
    original: one(body, 'original'),
    alias: one(body, 'alias').trim(),
    workflowText: one(body, 'workflow'),
    mapping,
    backends,
    sample: { backend: one(body, 's_backend'), values, images: many(body, 's_img'), extra: one(body, 's_extra') },
  };
}

function blankBackend(name: string, order: number, use: boolean): BackendState {
  return { name, use, order, pins: [], bypass: '', output: '' };
}

/** A workflow just pasted: the compiler's suggested mapping, the chosen backends, nothing pinned. */
export function stateForNew(
  alias: string,
  workflowText: string,
  workflow: Workflow,
  chosen: readonly string[],
  comfyBackends: readonly string[],
): EditorState {
  const mapping = Object.entries(suggestMapping(workflow)).map(([param, e]) => ({
    param,
    node: e.node,
    field: e.field,
    mode: '' as const,
  }));
  const backends = comfyBackends.map((name, i) => blankBackend(name, i + 1, chosen.includes(name)));
  return {
    original: '',
    alias,
    workflowText,
    mapping,
    backends,
    sample: { backend: chosen[0] ?? comfyBackends[0] ?? '', values: {}, images: [], extra: '' },
  };
}

/**
 * A stored alias as the editor shows it: the first entry's workflow and mapping (explicit
 * rows, then the suggestions the compiler adds), every comfyui backend with its entry's pins,
 * bypass and output. `warnings` says what the editor cannot keep (entries for backends that
 * are not comfyui backends of the fleet, candidates with a workflow of their own).
 */
export function stateFromEntries(
  alias: string,
  entries: readonly ImageModelEntry[],
  comfyBackends: readonly string[],
  infoOf: (backend: string) => ObjectInfo | undefined,
): { state: EditorState; warnings: string[] } {
  const first = entries[0];
  const workflow = first?.workflow_json ?? {};
  const explicit = first?.mapping ?? {};
  const eff = effectiveMapping({ workflow, mapping: explicit }, first ? infoOf(first.backend) : undefined);
  const resolved: Mapping = eff.ok ? eff.mapping : explicit;
  const mapping: MappingRow[] = Object.entries(resolved).map(([param, e]) => ({
    param,
    node: e.node,
    field: e.field,
    mode: modeOf(e.on_empty ?? ''),
  }));
  const warnings: string[] = [];
  const backends = comfyBackends.map((name, i) => {
    const at = entries.findIndex((e) => e.backend === name);
    if (at < 0) return blankBackend(name, entries.length + i + 1, false);
    const entry = entries[at];
    if (at > 0 && !isDeepStrictEqual(entry.workflow_json, first.workflow_json)) {
      warnings.push(
        `The entry for ${name} has a workflow of its own; the editor shows the first entry's, and ` +
          `saving gives every backend that one.`,
      );
    }
    return {
      name,
      use: true,
      order: at + 1,
      pins: (entry.fixed ?? []).map((p) => ({
        node: resolveNode(workflow, p.node) ?? p.node,
        field: p.field,
        value: valueText(p.value),
      })),
      bypass: (entry.bypass ?? []).join(', '),
      output: entry.output === undefined ? '' : (resolveNode(workflow, entry.output) ?? entry.output),
    };
  });
  for (const e of entries) {
    if (!comfyBackends.includes(e.backend))
      warnings.push(`The entry for "${e.backend}" names no comfyui backend of the fleet; saving drops it.`);
  }
  return {
    state: {
      original: alias,
      alias,
      workflowText: prettyJson(workflow),
      mapping,
      backends,
      sample: { backend: first?.backend ?? '', values: {}, images: [], extra: '' },
    },
    warnings,
  };
}

export function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  if (typeof value === 'object') return prettyJson(value, 0);
  return String(value);
}

/** The backends the alias runs on, in candidate order (the order field, then the fleet's). */
export function usedBackends(state: EditorState): number[] {
  return state.backends
    .map((b, i) => ({ b, i }))
    .filter(({ b }) => b.use)
    .sort((x, y) => x.b.order - y.b.order || x.i - y.i)
    .map(({ i }) => i);
}

/** Row-level refusals no configuration key can express: two rows naming one parameter. */
export function rowProblems(state: EditorState): Record<string, string> {
  const errors: Record<string, string> = {};
  const seen = new Map<string, number>();
  state.mapping.forEach((row, k) => {
    const other = seen.get(row.param);
    if (other !== undefined)
      errors[`m${k}-param`] = `Row ${other + 1} already maps '${row.param}': one row per parameter.`;
    else seen.set(row.param, k);
  });
  return errors;
}

/**
 * The `image_models.<alias>` entries of the state: one per used backend, each with the
 * workflow; the mapping on the first (it is shared by all candidates); pins typed the way the
 * compiler types them for that backend (kept as typed when they do not fit, so validation
 * names them).
 */
export function entriesOf(
  state: EditorState,
  workflow: Workflow,
  infoOf: (backend: string) => ObjectInfo | undefined,
): { entries: ImageModelEntry[]; index: EntryIndex } {
  const mapping: Mapping = {};
  for (const row of state.mapping)
    mapping[row.param] = { node: row.node, field: row.field, ...(row.mode ? { on_empty: row.mode } : {}) };
  const entries: ImageModelEntry[] = [];
  const index: EntryIndex = { backendAt: [], pinAt: [] };
  for (const bi of usedBackends(state)) {
    const b = state.backends[bi];
    const info = infoOf(b.name);
    const fixed: Pin[] = b.pins.map((p) => ({ node: p.node, field: p.field, value: pinValue(workflow, info, p) }));
    const bypass = b.bypass.split(/[\s,]+/).filter((s) => s !== '');
    entries.push({
      backend: b.name,
      workflow_json: workflow,
      ...(entries.length === 0 && state.mapping.length > 0 ? { mapping } : {}),
      ...(fixed.length > 0 ? { fixed } : {}),
      ...(bypass.length > 0 ? { bypass } : {}),
      ...(b.output !== '' ? { output: b.output } : {}),
    });
    index.backendAt.push(bi);
    index.pinAt.push(b.pins.map((_, j) => j));
  }
  return { entries, index };
}

/**
 * A pin's text as the input's type (per the backend's object_info, else the workflow's value); big
 * integers stay text.
 */
function pinValue(workflow: Workflow, info: ObjectInfo | undefined, pin: PinRow): unknown {
  const id = resolveNode(workflow, pin.node);
  if (!id) return pin.value;
  const cls = classInfo(info, workflow[id].class_type);
  const coerced = coerceValue(pin.value, cls ? inputDecl(cls, pin.field) : undefined, workflow[id].inputs[pin.field]);
  if (!coerced.ok || typeof coerced.value === 'bigint') return pin.value;
  return coerced.value;
}
