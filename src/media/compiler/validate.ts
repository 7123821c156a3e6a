/**
 * Checking an alias against its workflow (and a backend's object_info, when known) before any
 * request uses it, so a typo in the config is found at load time with the key path to fix.
 * Severity `error`: a request through this alias would fail or do the wrong thing.
 * `warning`: it works, but probably not as meant.
 */
import { isOutputClass, outputNodes } from './outputs.ts';
import { classInfo, inputDecl, isImageLoaderClass } from './object-info.ts';
import { nodesTitled, resolveNode } from './graph.ts';
import { isLoraParam, isStrengthParam } from './lora-params.ts';
import { pinKey } from './loras.ts';
import { coerceValue } from './values.ts';
import { isLink, isPlainObject, type GenerationAlias, type ObjectInfo, type Problem, type Workflow } from './types.ts';

const ON_EMPTY = ['placeholder', 'required', 'disable'];
/** Names the compiler reads itself (see compile.ts); a mapping cannot take them. */
/** Request keys the gateway reads itself. */
const isReserved = (param: string) => param === 'size' || param === 'n' || isLoraParam(param) || isStrengthParam(param);

export function validateAlias(alias: GenerationAlias, objectInfo: ObjectInfo | undefined, path: string): Problem[] {
  const problems: Problem[] = [];
  const error = (p: string, message: string) => problems.push({ path: p, message, severity: 'error' });
  const warn = (p: string, message: string) => problems.push({ path: p, message, severity: 'warning' });

  const workflow = alias.workflow;
  if (!isPlainObject(workflow) || Object.keys(workflow).length === 0) {
    error(`${path}.workflow`, 'must be an API-format workflow (an object of nodes); export it with "Save (API)"');
    return problems;
  }
  if (!checkNodes(workflow, objectInfo, `${path}.workflow`, error)) return problems;

  // resolves a node ref, reporting where it fails
  const node = (ref: unknown, at: string): string | undefined => {
    if (typeof ref !== 'string' || ref === '') {
      error(at, 'must be a node id or a node title');
      return undefined;
    }
    const id = resolveNode(workflow, ref);
    if (id) return id;
    const titled = nodesTitled(workflow, ref).length;
    error(
      at,
      titled > 1 ? `title '${ref}' names ${titled} nodes; use the node id` : `no node '${ref}' in the workflow`,
    );
    return undefined;
  };
  // checks `field` is an input of the node's class; returns false when it certainly is not
  const field = (id: string, name: unknown, at: string): name is string => {
    if (typeof name !== 'string' || name === '') {
      error(at, 'must be an input name');
      return false;
    }
    const info = classInfo(objectInfo, workflow[id].class_type);
    if (info && !inputDecl(info, name) && !Object.hasOwn(workflow[id].inputs, name)) {
      error(at, `${workflow[id].class_type} has no input '${name}'`);
      return false;
    }
    if (!info && !Object.hasOwn(workflow[id].inputs, name)) {
      warn(
        at,
        `node ${id} (${workflow[id].class_type}) has no input '${name}' in the workflow, and no ` +
          `object_info describes the class`,
      );
    }
    return true;
  };

  const pinned = new Set<string>();
  for (const [i, pin] of (alias.fixed ?? []).entries()) {
    const at = `${path}.fixed[${i}]`;
    if (!isPlainObject(pin)) {
      error(at, 'must be { node, field, value }');
      continue;
    }
    const id = node(pin.node, `${at}.node`);
    if (!id || !field(id, pin.field, `${at}.field`)) continue;
    pinned.add(pinKey(id, pin.field));
    const info = classInfo(objectInfo, workflow[id].class_type);
    const coerced = coerceValue(
      pin.value,
      info ? inputDecl(info, pin.field) : undefined,
      workflow[id].inputs[pin.field],
    );
    if (!coerced.ok) error(`${at}.value`, `${workflow[id].class_type}.${pin.field} ${coerced.message}`);
  }

  const targets = new Map<string, string>();
  for (const [param, entry] of Object.entries(alias.mapping ?? {})) {
    const at = `${path}.mapping.${param}`;
    if (!isPlainObject(entry)) {
      error(at, 'must be { node, field, on_empty? }');
      continue;
    }
    if (isReserved(param))
      error(at, `'${param}' is read by the gateway itself (size, n, lora_N, strength_N) and cannot be mapped`);
    const id = node(entry.node, `${at}.node`);
    if (!id || !field(id, entry.field, `${at}.field`)) continue;
    const value = workflow[id].inputs[entry.field];
    if (isLink(value))
      error(`${at}.field`, `${id}.${entry.field} is linked from node ${value[0]}; map the field on that node instead`);
    const key = pinKey(id, entry.field);
    if (pinned.has(key)) warn(at, `${id}.${entry.field} is pinned in fixed, so '${param}' can never be set`);
    const other = targets.get(key);
    if (other) error(at, `maps the same field as '${other}'`);
    else targets.set(key, param);
    if (entry.on_empty !== undefined) {
      if (!ON_EMPTY.includes(entry.on_empty as string))
        error(`${at}.on_empty`, `must be one of ${ON_EMPTY.join(', ')}`);
      else if (!isImageLoaderClass(workflow[id].class_type))
        error(`${at}.on_empty`, `applies to image slots only; ${workflow[id].class_type} is not an image loader`);
    }
  }

  for (const [i, ref] of (alias.bypass ?? []).entries()) node(ref, `${path}.bypass[${i}]`);
  if (alias.output !== undefined) {
    const id = node(alias.output, `${path}.output`);
    if (id && !isOutputClass(workflow[id].class_type, objectInfo)) {
      const known = classInfo(objectInfo, workflow[id].class_type) !== undefined;
      (known ? error : warn)(
        `${path}.output`,
        `${workflow[id].class_type} is not ${known ? '' : 'known to be '}an output node`,
      );
    }
  } else if (outputNodes(workflow, objectInfo).length === 0) {
    error(
      `${path}.workflow`,
      'has no output node (SaveImage, PreviewImage, SaveVideo, …); ComfyUI refuses it with prompt_no_outputs',
    );
  }
  return problems;
}

/** Node shapes and, with object_info, installed classes; false when the graph is unusable. */
function checkNodes(
  workflow: Workflow,
  objectInfo: ObjectInfo | undefined,
  path: string,
  error: (p: string, m: string) => void,
): boolean {
  let usable = true;
  for (const [id, n] of Object.entries(workflow)) {
    if (!isPlainObject(n) || typeof n.class_type !== 'string' || !isPlainObject(n.inputs)) {
      error(`${path}.${id}`, 'must be { class_type, inputs }');
      usable = false;
      continue;
    }
    if (objectInfo && !classInfo(objectInfo, n.class_type)) {
      error(`${path}.${id}.class_type`, `${n.class_type} is not installed on this server (not in its object_info)`);
    }
    for (const [name, value] of Object.entries(n.inputs)) {
      if (isLink(value) && !Object.hasOwn(workflow, value[0]))
        error(`${path}.${id}.inputs.${name}`, `links to node ${value[0]}, which is not in the workflow`);
    }
  }
  return usable;
}
