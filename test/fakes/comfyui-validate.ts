/**
 * POST /prompt validation the way ComfyUI's execution.py `validate_prompt` does it, against the
 * fake's object_info: every node needs a known class_type (else `missing_node_type`), there must be
 * an output node (`prompt_no_outputs`), then each output is validated depth-first through its
 * links. Per-input reasons (`required_input_missing`, `bad_linked_input`, `return_type_mismatch`,
 * `invalid_input_type`, `value_smaller_than_min`, `value_bigger_than_max`, `value_not_in_list`,
 * `custom_validation_failed` for a LoadImage file that is not in the input folder) land in
 * `node_errors[node_id] = {errors, dependent_outputs}` (0.27.0 has no `class_type` there). A link to
 * a node that is not in the prompt raises a KeyError in ComfyUI, reported as
 * `exception_during_validation` (on the output itself) or `exception_during_inner_validation` (on
 * the node whose input links to it). The prompt is queued when at least one output is valid.
 */
import type { ObjectInfo } from './comfyui-nodes.ts';

export interface ComfyErrorBody {
  type: string;
  message: string;
  details: string;
  extra_info: Record<string, unknown>;
}

export interface NodeError {
  errors: ComfyErrorBody[];
  dependent_outputs: string[];
}

export type Validation =
  | { ok: true; outputs: string[]; nodeErrors: Record<string, NodeError> }
  | { ok: false; error: ComfyErrorBody; nodeErrors: Record<string, NodeError> };

export interface ValidateOptions {
  objectInfo: ObjectInfo;
  /** Files in the input folder (`sub/name` or `name`), for LoadImage's custom validation. */
  inputFiles: ReadonlySet<string>;
  /** Check combo values (model names, sampler names, …) against their lists. */
  validateCombos: boolean;
  /** Skip LoadImage's file check (the file then goes missing at execution time instead). */
  skipUploadCheck: boolean;
  /** The pre-2025 answer for an unknown class: `invalid_prompt` "Cannot execute because node X does not exist." */
  legacyMissingNode: boolean;
  /** `partial_execution_targets`: only these outputs. */
  targets?: string[];
}

class KeyError extends Error {
  override name = 'KeyError';
}

const err = (
  type: string,
  message: string,
  details: string,
  extra_info: Record<string, unknown> = {},
): ComfyErrorBody => ({ type, message, details, extra_info });

/** A Python-ish repr of a combo list, as in `value_not_in_list` details. */
function pyList(list: unknown[]): string {
  return `[${list.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ')}]`;
}

function comboOptions(entry: unknown[]): unknown[] | undefined {
  if (Array.isArray(entry[0])) return entry[0];
  const opts = entry[1] as Record<string, unknown> | undefined;
  if (entry[0] === 'COMBO' && Array.isArray(opts?.options)) return opts.options;
  return undefined;
}

/** `validate_node_input`: `*` matches all; comma lists are unions; combos take COMBO/STRING links. */
function typesMatch(received: string, wanted: unknown): boolean {
  if (Array.isArray(wanted) || wanted === 'COMBO') return ['COMBO', 'STRING', '*'].includes(received);
  if (typeof wanted !== 'string') return false;
  if (received === '*' || wanted === '*' || received === wanted) return true;
  const r = received.split(','),
    w = wanted.split(',');
  return r.every((t) => w.includes(t.trim()));
}

/** The input config as ComfyUI echoes it: long combo lists become "(list of length N)". */
function configOf(entry: unknown[]): unknown[] {
  const options = comboOptions(entry);
  if (options && options.length > 20) return [`(list of length ${options.length})`, ...entry.slice(1)];
  return entry;
}

export function nodeTitle(node: any): string | undefined {
  const t = node?._meta?.title;
  return typeof t === 'string' ? t : undefined;
}

export function validatePrompt(prompt: Record<string, any>, o: ValidateOptions): Validation {
  for (const [id, node] of Object.entries(prompt)) {
    const title = nodeTitle(node);
    if (typeof node !== 'object' || node === null || !('class_type' in node)) {
      return {
        ok: false,
        nodeErrors: {},
        error: err(
          'missing_node_type',
          `Node '${title ?? `ID #${id}`}' has no class_type. The workflow may be corrupted or a custom node is missing.`,
          `Node ID '#${id}'`,
          { node_id: id, class_type: null, node_title: title ?? null },
        ),
      };
    }
    if (!Object.hasOwn(o.objectInfo, node.class_type)) {
      if (o.legacyMissingNode)
        return {
          ok: false,
          nodeErrors: {},
          error: err(
            'invalid_prompt',
            `Cannot execute because node ${node.class_type} does not exist.`,
            `Node ID '#${id}'`,
          ),
        };
      return {
        ok: false,
        nodeErrors: {},
        error: err(
          'missing_node_type',
          `Node '${title ?? node.class_type}' not found. The custom node may not be installed.`,
          `Node ID '#${id}'`,
          { node_id: id, class_type: node.class_type, node_title: title ?? node.class_type },
        ),
      };
    }
  }
  let outputs = Object.keys(prompt).filter((id) => o.objectInfo[prompt[id].class_type]?.output_node === true);
  if (o.targets) outputs = outputs.filter((id) => o.targets!.includes(id));
  if (outputs.length === 0)
    return { ok: false, nodeErrors: {}, error: err('prompt_no_outputs', 'Prompt has no outputs', '') };

  const validated = new Map<string, { valid: boolean; reasons: ComfyErrorBody[] }>();

  function validateInputs(id: string): { valid: boolean; reasons: ComfyErrorBody[] } {
    const known = validated.get(id);
    if (known) return known;
    const node = prompt[id];
    const info = o.objectInfo[node.class_type]!;
    const inputs: Record<string, any> = node.inputs ?? {};
    const errors: ComfyErrorBody[] = [];
    let valid = true;
    const categories: Array<['required' | 'optional', Record<string, unknown[]>]> = [
      ['required', info.input?.required ?? {}],
      ['optional', info.input?.optional ?? {}],
    ];
    for (const [category, defs] of categories) {
      for (const [x, entry] of Object.entries(defs)) {
        if (!Object.hasOwn(inputs, x)) {
          if (category === 'required')
            errors.push(err('required_input_missing', 'Required input is missing', x, { input_name: x }));
          continue;
        }
        const val = inputs[x];
        const wanted = entry[0];
        const opts = (entry[1] ?? {}) as Record<string, any>;
        if (Array.isArray(val)) {
          if (val.length !== 2) {
            errors.push(
              err('bad_linked_input', 'Bad linked input, must be a length-2 list of [node_id, slot_index]', x, {
                input_name: x,
                input_config: configOf(entry),
                received_value: val,
              }),
            );
            continue;
          }
          const from = String(val[0]);
          if (!Object.hasOwn(prompt, from)) throw new KeyError(`'${from}'`);
          const received = o.objectInfo[prompt[from].class_type]?.output?.[val[1]];
          if (typeof received !== 'string') throw new Error('tuple index out of range');
          if (!typesMatch(received, wanted)) {
            const shown = Array.isArray(wanted) ? 'COMBO' : String(wanted);
            errors.push(
              err(
                'return_type_mismatch',
                'Return type mismatch between linked nodes',
                `${x}, received_type(${received}) mismatch input_type(${shown})`,
                { input_name: x, input_config: configOf(entry), received_type: received, linked_node: val },
              ),
            );
            continue;
          }
          try {
            if (!validateInputs(from).valid) valid = false;
          } catch (e) {
            const ex = e as Error;
            validated.set(from, {
              valid: false,
              reasons: [
                err('exception_during_inner_validation', 'Exception when validating inner node', ex.message, {
                  input_name: x,
                  input_config: configOf(entry),
                  exception_message: ex.message,
                  exception_type: ex.name,
                  traceback: [],
                  linked_node: val,
                }),
              ],
            });
            valid = false;
          }
          continue;
        }
        // A value: converted the way ComfyUI does, then checked.
        let v: unknown = val;
        if (wanted === 'INT' || wanted === 'FLOAT') {
          const num = typeof val === 'number' ? val : typeof val === 'string' && val.trim() !== '' ? Number(val) : NaN;
          if (!Number.isFinite(num)) {
            errors.push(
              err(
                'invalid_input_type',
                `Failed to convert an input value to a ${wanted} value`,
                `${x}, ${String(val)}, could not convert to ${wanted === 'INT' ? 'int' : 'float'}`,
                {
                  input_name: x,
                  input_config: configOf(entry),
                  received_value: val,
                  exception_message: 'could not convert',
                },
              ),
            );
            continue;
          }
          v = wanted === 'INT' ? Math.trunc(num) : num;
          if (typeof opts.min === 'number' && (v as number) < opts.min) {
            errors.push(
              err('value_smaller_than_min', `Value ${v} smaller than min of ${opts.min}`, x, {
                input_name: x,
                input_config: configOf(entry),
                received_value: v,
              }),
            );
            continue;
          }
          if (typeof opts.max === 'number' && (v as number) > opts.max) {
            errors.push(
              err('value_bigger_than_max', `Value ${v} bigger than max of ${opts.max}`, x, {
                input_name: x,
                input_config: configOf(entry),
                received_value: v,
              }),
            );
            continue;
          }
        }
        if (node.class_type === 'LoadImage' && x === 'image') {
          // LoadImage.VALIDATE_INPUTS replaces the combo check with a file check.
          if (!o.skipUploadCheck && !o.inputFiles.has(String(v).replace(/\s*\[(input|output|temp)\]$/, ''))) {
            errors.push(
              err(
                'custom_validation_failed',
                'Custom validation failed for node',
                `${x} - Invalid image file: ${String(v)}`,
                { input_name: x, input_config: configOf(entry), received_value: v },
              ),
            );
          }
          continue;
        }
        const options = comboOptions(entry);
        if (options && o.validateCombos && !options.includes(v)) {
          const listInfo = options.length > 20 ? `(list of length ${options.length})` : pyList(options);
          errors.push(
            err('value_not_in_list', 'Value not in list', `${x}: '${String(v)}' not in ${listInfo}`, {
              input_name: x,
              input_config: configOf(entry),
              received_value: v,
            }),
          );
        }
      }
    }
    const result = { valid: valid && errors.length === 0, reasons: errors };
    validated.set(id, result);
    return result;
  }

  const good: string[] = [];
  const failed: Array<[string, ComfyErrorBody[]]> = [];
  const nodeErrors: Record<string, NodeError> = {};
  for (const out of [...outputs].sort(byNodeId)) {
    let result: { valid: boolean; reasons: ComfyErrorBody[] };
    try {
      result = validateInputs(out);
    } catch (e) {
      const ex = e as Error;
      result = {
        valid: false,
        reasons: [
          err('exception_during_validation', 'Exception when validating node', ex.message, {
            exception_type: ex.name,
            traceback: [],
          }),
        ],
      };
      validated.set(out, result);
    }
    if (result.valid) {
      good.push(out);
      continue;
    }
    failed.push([out, result.reasons]);
    for (const [id, r] of validated) {
      if (r.valid || r.reasons.length === 0) continue;
      nodeErrors[id] ??= { errors: r.reasons, dependent_outputs: [] };
      nodeErrors[id]!.dependent_outputs.push(out);
    }
  }
  if (good.length === 0) {
    const details = failed.flatMap(([, reasons]) => reasons.map((r) => `${r.message}: ${r.details}`)).join('\n');
    return {
      ok: false,
      nodeErrors,
      error: err('prompt_outputs_failed_validation', 'Prompt outputs failed validation', details),
    };
  }
  return { ok: true, outputs: good, nodeErrors };
}

/** Node ids in ComfyUI order: numeric where they are numbers ("9" < "10"), else as strings. */
export function byNodeId(a: string, b: string): number {
  const na = Number(a),
    nb = Number(b);
  if (Number.isFinite(na) && Number.isFinite(nb)) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}
