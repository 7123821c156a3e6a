/**
 * What the mapping pages show, as plain data for the templates: the alias list (candidates,
 * output kind, problems, where the table comes from) and the editor (the workflow's nodes; per
 * node the fields its class has on each backend, with type and min/max/step from that
 * backend's object_info; pins with a backend's combo choices; output nodes; LoRA slots; the
 * sample parameters of a dry run). Pure: the tab hands in the state and what the gateway
 * knows of each backend.
 */
import type { Problem, ObjectInfo, Workflow, WorkflowNode } from '../media/compiler/index.ts';
import {
  effectiveMapping,
  isImageLoaderClass,
  isLink,
  loraSlots,
  outputKind,
  outputNodes,
  suggestMapping,
} from '../media/compiler/index.ts';
import { sortedIds } from '../media/compiler/graph.ts';
import { childPath } from '../config/problems.ts';
import { classInfo, inputDecls, type InputDecl } from '../media/compiler/object-info.ts';
import type { EditorState } from './mapping-form.ts';
import { ON_EMPTY_MODES, usedBackends, valueText } from './mapping-form.ts';

/** What the gateway knows of one comfyui backend of the fleet. */
export interface FleetBackend {
  name: string;
  healthy: boolean;
  enabled: boolean;
  info?: ObjectInfo;
  loras?: number;
}

export interface NodeOption {
  id: string;
  label: string;
}
export interface FieldOption {
  name: string;
  hint: string;
}
/** A `<template>` of field options: `scope` is `m` (the shared mapping) or `b<index>` (a backend's pins). */
export interface FieldSet {
  scope: string;
  node: string;
  options: FieldOption[];
}
/** A `<template>` with a backend's choices for one combo input. */
export interface ChoiceSet {
  scope: string;
  node: string;
  field: string;
  choices: string[];
}

export interface RowView {
  k: number;
  param: string;
  node: string;
  field: string;
  mode: string;
  fields: FieldOption[];
  hint: string;
  image: boolean;
  suggested: boolean;
}
export interface PinView {
  j: number;
  node: string;
  field: string;
  value: string;
  fields: FieldOption[];
  hint: string;
  choices?: string[];
}
export interface BackendEditView {
  bi: number;
  name: string;
  use: boolean;
  order: number;
  healthy: boolean;
  enabled: boolean;
  known: boolean;
  classes: number;
  loras?: number;
  pins: PinView[];
  bypass: string;
  output: string;
  outputs: NodeOption[];
  defaultOutputs: string;
}
export interface LoraSlotView {
  node: string;
  label: string;
  field: string;
  current: string;
  free: boolean;
  pinnedOn: string[];
}
export interface SampleParam {
  k: number;
  name: string;
  value: string;
  image: boolean;
  checked: boolean;
  hint: string;
}
export interface EditorModel {
  nodes: NodeOption[];
  rows: RowView[];
  backends: BackendEditView[];
  loraSlots: LoraSlotView[];
  sample: { backend: string; backends: string[]; params: SampleParam[]; extra: string };
  fieldSets: FieldSet[];
  choiceSets: ChoiceSet[];
  modes: readonly string[];
}

const BLANK_ROWS = 2;
const BLANK_PINS = 2;
const SHORT = 60;

export function editorModel(state: EditorState, workflow: Workflow, fleet: readonly FleetBackend[]): EditorModel {
  const infoOf = (name: string) => fleet.find((b) => b.name === name)?.info;
  const used = usedBackends(state).map((i) => state.backends[i].name);
  // the shared mapping's fields: the first candidate that describes the class, else any backend
  const order = [...used, ...fleet.map((b) => b.name).filter((n) => !used.includes(n))];
  const sharedInfo = (cls: string) => order.map(infoOf).find((info) => classInfo(info, cls) !== undefined);
  const ids = sortedIds(Object.keys(workflow));
  const nodes = ids.map((id) => ({ id, label: nodeLabel(id, workflow[id]) }));
  const nodeOf = (id: string) => (Object.hasOwn(workflow, id) ? workflow[id] : undefined);
  const fieldsFor = (id: string, info: ObjectInfo | undefined, current: string): FieldOption[] => {
    const node = nodeOf(id);
    return node ? fieldOptions(node, info, current) : current ? [{ name: current, hint: '' }] : [];
  };

  const suggested = suggestMapping(workflow);
  const rows: RowView[] = [
    ...state.mapping,
    ...Array.from({ length: BLANK_ROWS }, () => ({ param: '', node: '', field: '', mode: '' as const })),
  ].map((row, k) => {
    const node = nodeOf(row.node);
    const fields = fieldsFor(row.node, node && sharedInfo(node.class_type), row.field);
    const s = row.param ? suggested[row.param] : undefined;
    return {
      k,
      param: row.param,
      node: row.node,
      field: row.field,
      mode: row.mode,
      fields,
      hint: fields.find((f) => f.name === row.field)?.hint ?? '',
      image: node !== undefined && isImageLoaderClass(node.class_type),
      suggested: s !== undefined && s.node === row.node && s.field === row.field,
    };
  });

  const fieldSets: FieldSet[] = [];
  const choiceSets: ChoiceSet[] = [];
  for (const id of ids)
    fieldSets.push({
      scope: 'm',
      node: id,
      options: fieldOptions(workflow[id], sharedInfo(workflow[id].class_type), ''),
    });

  const backends = state.backends.map((b, bi): BackendEditView => {
    const fb = fleet.find((f) => f.name === b.name);
    const info = fb?.info;
    const scope = `b${bi}`;
    for (const id of ids) {
      fieldSets.push({ scope, node: id, options: fieldOptions(workflow[id], info, '') });
      const cls = classInfo(info, workflow[id].class_type);
      for (const d of cls ? inputDecls(cls) : []) {
        if (d.kind === 'COMBO' && (d.choices?.length ?? 0) > 0)
          choiceSets.push({ scope, node: id, field: d.name, choices: d.choices!.map(String) });
      }
    }
    const pins = [...b.pins, ...Array.from({ length: BLANK_PINS }, () => ({ node: '', field: '', value: '' }))].map(
      (p, j): PinView => {
        const fields = fieldsFor(p.node, info, p.field);
        const choices = choiceSets.find((c) => c.scope === scope && c.node === p.node && c.field === p.field)?.choices;
        return {
          j,
          node: p.node,
          field: p.field,
          value: p.value,
          fields,
          hint: fields.find((f) => f.name === p.field)?.hint ?? '',
          ...(choices ? { choices } : {}),
        };
      },
    );
    const outs = outputNodes(workflow, info);
    const outputs = outs.map((id) => ({
      id,
      label: `${nodeLabel(id, workflow[id])} (${outputKind(workflow[id].class_type)})`,
    }));
    if (b.output !== '' && !outs.includes(b.output))
      outputs.push({
        id: b.output,
        label: nodeOf(b.output)
          ? `${nodeLabel(b.output, workflow[b.output])} (not an output node)`
          : `${b.output} (no such node)`,
      });
    return {
      bi,
      name: b.name,
      use: b.use,
      order: b.order,
      healthy: fb?.healthy ?? false,
      enabled: fb?.enabled ?? false,
      known: info !== undefined,
      classes: info ? Object.keys(info).length : 0,
      ...(fb?.loras !== undefined ? { loras: fb.loras } : {}),
      pins,
      bypass: b.bypass,
      output: b.output,
      outputs,
      defaultOutputs: outs.join(', ') || 'none',
    };
  });

  const pinnedOn = (node: string, field: string) =>
    state.backends.filter((b) => b.use && b.pins.some((p) => p.node === node && p.field === field)).map((b) => b.name);
  const slots = loraSlots(workflow).map((s) => ({
    node: s.node,
    label: nodeLabel(s.node, workflow[s.node]),
    field: s.nameField,
    current: valueText(s.current) || '(empty)',
    free: s.free && pinnedOn(s.node, s.nameField).length === 0,
    pinnedOn: pinnedOn(s.node, s.nameField),
  }));

  return {
    nodes,
    rows,
    backends,
    loraSlots: slots,
    sample: sampleOf(state, workflow, used, infoOf, fieldsFor),
    fieldSets,
    choiceSets,
    modes: ON_EMPTY_MODES,
  };
}

function sampleOf(
  state: EditorState,
  workflow: Workflow,
  used: string[],
  infoOf: (n: string) => ObjectInfo | undefined,
  fieldsFor: (id: string, info: ObjectInfo | undefined, f: string) => FieldOption[],
): EditorModel['sample'] {
  const backend = used.includes(state.sample.backend) ? state.sample.backend : (used[0] ?? '');
  const explicit = Object.fromEntries(state.mapping.map((r) => [r.param, { node: r.node, field: r.field }]));
  const eff = effectiveMapping({ workflow, mapping: explicit }, infoOf(backend));
  const mapping = eff.ok ? eff.mapping : explicit;
  const params = Object.keys(mapping)
    .sort()
    .map((name, k) => {
      const { node, field } = mapping[name];
      const n = Object.hasOwn(workflow, node) ? workflow[node] : undefined;
      const described = n && fieldsFor(node, infoOf(backend), field).find((f) => f.name === field);
      return {
        k,
        name,
        value: state.sample.values[name] ?? '',
        image: n !== undefined && isImageLoaderClass(n.class_type),
        checked: state.sample.images.includes(name),
        hint: `${node}.${field}${n ? ` · ${described?.hint ?? ''}` : ''}`,
      };
    });
  return { backend, backends: used, params, extra: state.sample.extra };
}

export function nodeLabel(id: string, node: WorkflowNode | undefined): string {
  if (!node) return id;
  const title = node._meta?.title;
  return title && title !== node.class_type ? `${id} · ${title} · ${node.class_type}` : `${id} · ${node.class_type}`;
}

/**
 * The fields a request or a pin can set on a node: the class's widget inputs per object_info
 * (sockets and linked inputs left out: a link is set where it comes from), else the node's
 * literal inputs; `current` is kept even when it is not one of them, so the page shows it.
 */
export function fieldOptions(node: WorkflowNode, info: ObjectInfo | undefined, current: string): FieldOption[] {
  const cls = classInfo(info, node.class_type);
  const out: FieldOption[] = [];
  const seen = new Set<string>();
  for (const d of cls ? inputDecls(cls) : []) {
    seen.add(d.name);
    const now = node.inputs[d.name];
    if (d.kind === 'socket' || isLink(now)) continue;
    out.push({ name: d.name, hint: declHint(d, now) });
  }
  for (const [name, now] of Object.entries(node.inputs)) {
    if (seen.has(name) || isLink(now)) continue;
    out.push({
      name,
      hint: `now ${short(now)}${info ? ` · ${node.class_type} is not in this object_info` : ' · no object_info yet'}`,
    });
  }
  if (current !== '' && !out.some((f) => f.name === current)) {
    const now = node.inputs[current];
    out.unshift({
      name: current,
      hint: isLink(now) ? `linked from node ${now[0]}: set it on that node` : `not an input of ${node.class_type}`,
    });
  }
  return out;
}

function declHint(d: InputDecl, now: unknown): string {
  const parts: string[] = [d.kind === 'COMBO' ? `choice of ${d.choices?.length ?? 0}` : d.type];
  if (d.kind === 'INT' || d.kind === 'FLOAT') {
    for (const key of ['min', 'max', 'step'] as const)
      if (typeof d.options[key] === 'number') parts.push(`${key} ${num(d.options[key] as number)}`);
  }
  if (d.options.default !== undefined && d.kind !== 'STRING') parts.push(`default ${short(d.options.default)}`);
  if (!d.required) parts.push('optional');
  if (now !== undefined) parts.push(`now ${short(now)}`);
  return parts.join(' · ');
}

function num(n: number): string {
  return Math.abs(n) >= 1e15 ? n.toExponential(3).replace('e+', 'e') : String(n);
}

function short(v: unknown): string {
  const text = typeof v === 'string' ? JSON.stringify(v) : valueText(v);
  return text.length > SHORT ? `${text.slice(0, SHORT - 1)}…` : text;
}

// ------------------------------------------------------------------ the alias list

export interface AliasRow {
  name: string;
  href: string;
  /** Backends the gateway runs it on (its candidates), in order. */
  candidates: string[];
  /** Backends its entries name that are no candidate. */
  dropped: string[];
  kinds: string[];
  errors: Problem[];
  warnings: Problem[];
}

export interface ListModel {
  rows: AliasRow[];
  source: 'default' | 'config.yaml' | 'store';
  overridden: boolean;
  /** Aliases of config.yaml that the store's table leaves out. */
  hiddenFromFile: string[];
}

export interface ListInputs {
  models: Record<string, { backend: string }[]>;
  candidates: (alias: string) => { backend: string; alias: { workflow: Workflow; output?: string } }[] | undefined;
  problems: readonly Problem[];
  infoOf: (backend: string) => ObjectInfo | undefined;
  source: ListModel['source'];
  overridden: boolean;
  fileValue?: unknown;
}

export function listModel(input: ListInputs): ListModel {
  const rows = Object.entries(input.models).map(([name, entries]): AliasRow => {
    const at = childPath('image_models', name);
    const own = input.problems.filter(
      (p) => p.path === at || p.path.startsWith(`${at}.`) || p.path.startsWith(`${at}[`),
    );
    const candidates = input.candidates(name) ?? [];
    const kinds = new Set<string>();
    const first = candidates[0];
    if (first) {
      const wf = first.alias.workflow;
      const outs =
        first.alias.output !== undefined ? [first.alias.output] : outputNodes(wf, input.infoOf(first.backend));
      for (const id of outs) if (Object.hasOwn(wf, id)) kinds.add(outputKind(wf[id].class_type));
    }
    return {
      name,
      href: `/ui/mapping/${encodeURIComponent(name)}`,
      candidates: candidates.map((c) => c.backend),
      dropped: entries.map((e) => e.backend).filter((b) => !candidates.some((c) => c.backend === b)),
      kinds: [...kinds],
      errors: own.filter((p) => p.severity === 'error'),
      warnings: own.filter((p) => p.severity !== 'error'),
    };
  });
  const file = input.fileValue && typeof input.fileValue === 'object' ? Object.keys(input.fileValue) : [];
  return {
    rows,
    source: input.source,
    overridden: input.overridden,
    hiddenFromFile: file.filter((n) => !Object.hasOwn(input.models, n)),
  };
}
