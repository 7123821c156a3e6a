/**
 * Compiling an edited alias for a try, with nothing stored and no job: one candidate (from the
 * service's check, `services.admin.checkImageAlias`) through the compiler's `compile()` with
 * sample parameters. The result is shown as a diff of the final workflow against the pasted
 * one: inputs changed or unwired, nodes removed (pruned) and bypassed.
 */
import { prettyJson } from './format.ts';
import type { GenerationCandidate } from '../media/generation-catalog.ts';
import { compile, isLink, type ObjectInfo, type Workflow } from '../media/compiler/index.ts';
import { parseExactJson } from '../wire/exact-json.ts';
import { sortedIds } from '../media/compiler/graph.ts';
import { nodeLabel } from './mapping-model.ts';
import type { SampleState } from './mapping-form.ts';

export interface NodeRef {
  id: string;
  label: string;
}
export interface InputChange {
  node: string;
  label: string;
  field: string;
  before: string;
  after: string;
}

export type DryRun =
  | {
      ok: true;
      backend: string;
      seed?: string;
      outputs: NodeRef[];
      removed: NodeRef[];
      bypassed: NodeRef[];
      changes: InputChange[];
      uploads: { param: string; node: string; name: string; placeholder: boolean }[];
      notes: string[];
      promptJson: string;
      objectInfo: boolean;
    }
  | { ok: false; backend: string; status: number; message: string; param?: string };

/** The request a dry run sends: the sample values, then the extra JSON (which wins); a refusal names the form field. */
export function sampleRequest(
  sample: SampleState,
): { ok: true; params: Record<string, unknown> } | { ok: false; field: string; message: string } {
  const params: Record<string, unknown> = { ...sample.values };
  if (sample.extra.trim() !== '') {
    let extra: unknown;
    try {
      extra = parseExactJson(sample.extra);
    } catch (err) {
      return { ok: false, field: 's-extra', message: `Not JSON: ${(err as Error).message}` };
    }
    if (typeof extra !== 'object' || extra === null || Array.isArray(extra))
      return {
        ok: false,
        field: 's-extra',
        message: 'Must be a JSON object of parameters, like {"lora_1": "x.safetensors"}.',
      };
    Object.assign(params, extra);
  }
  return { ok: true, params };
}

export function dryRun(
  candidate: GenerationCandidate,
  params: Record<string, unknown>,
  images: string[],
  objectInfo: ObjectInfo | undefined,
): DryRun {
  const backend = candidate.backend;
  const result = compile(params, candidate.alias, {
    jobId: 'dryrun',
    objectInfo,
    images: Object.fromEntries(images.map((p) => [p, { ext: 'png' }])),
  });
  if (!result.ok)
    return {
      ok: false,
      backend,
      status: result.error.status,
      message: result.error.message,
      ...(result.error.param ? { param: result.error.param } : {}),
    };
  const original = candidate.alias.workflow;
  const ref = (id: string) => ({ id, label: nodeLabel(id, original[id]) });
  return {
    ok: true,
    backend,
    ...(result.seed !== undefined ? { seed: result.seed } : {}),
    outputs: result.outputs.map(ref),
    removed: result.removed.map(ref),
    bypassed: result.bypassed.map(ref),
    changes: inputChanges(original, result.prompt),
    uploads: result.uploads.map((u) => ({
      param: u.param,
      node: u.node,
      name: u.name,
      placeholder: u.placeholder === true,
    })),
    notes: result.notes,
    promptJson: prettyJson(result.prompt),
    objectInfo: objectInfo !== undefined,
  };
}

/** Every input of a surviving node whose value differs from the pasted workflow's (unwired ones too). */
export function inputChanges(before: Workflow, after: Workflow): InputChange[] {
  const out: InputChange[] = [];
  for (const id of sortedIds(Object.keys(after))) {
    if (!Object.hasOwn(before, id)) continue;
    const was = before[id].inputs;
    const now = after[id].inputs;
    for (const field of new Set([...Object.keys(was), ...Object.keys(now)])) {
      const a = Object.hasOwn(was, field) ? shown(was[field]) : '(absent)';
      const b = Object.hasOwn(now, field) ? shown(now[field]) : '(unwired)';
      if (a !== b) out.push({ node: id, label: nodeLabel(id, before[id]), field, before: a, after: b });
    }
  }
  return out;
}

function shown(value: unknown): string {
  if (isLink(value)) return `← node ${value[0]} output ${value[1]}`;
  const text = prettyJson(value, 0);
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}
