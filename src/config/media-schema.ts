/**
 * The media part of config.yaml: generation aliases (`image_models`), GPU groups, the media
 * knobs and the options only comfyui backends read, as JSON Schema fragments (schema.ts puts
 * them in place) plus the checks a schema cannot express: the backend an alias names, one
 * entry per backend, where the workflow comes from and whether it is one.
 */
import { isObject } from '../json.ts';
import { DEFAULTS, GPU_GROUP_DEFAULTS } from './defaults.ts';
import { childPath, type ConfigProblem } from './problems.ts';

const positiveSeconds = { type: 'number', exclusiveMinimum: 0 } as const;
const nonNegativeSeconds = { type: 'number', minimum: 0 } as const;

/** Backend fields of the media layer: `gpu_group` (any backend) and the comfyui-only knobs. */
export const mediaBackendProperties = {
  gpu_group: { type: 'string', minLength: 1 },
  stuck_after_s: positiveSeconds,
  poll_interval: positiveSeconds,
  max_wait: positiveSeconds,
  read_timeout: positiveSeconds,
  disconnect_grace: nonNegativeSeconds,
  auto_restart: { type: 'boolean' },
  restart_cooldown_s: nonNegativeSeconds,
} as const;

/** Options only a comfyui backend reads. */
export const COMFY_ONLY = [
  'stuck_after_s',
  'poll_interval',
  'max_wait',
  'read_timeout',
  'disconnect_grace',
  'auto_restart',
  'restart_cooldown_s',
] as const;

/** A node is named by its id; YAML reads an unquoted `61` as a number, which is accepted (and made a string). */
const nodeRef = {
  type: ['string', 'integer'],
  minLength: 1,
  hint: 'must be a node id (or a unique node title)',
} as const;
const inputName = { type: 'string', minLength: 1, hint: 'must be an input name of the node' } as const;

const imageModelEntrySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['backend'],
  properties: {
    backend: { type: 'string', minLength: 1 },
    workflow: {
      type: 'string',
      minLength: 1,
      hint: 'must be the path of an API-format workflow file, relative to config.yaml',
    },
    workflow_json: {
      type: 'object',
      hint: 'must be a ComfyUI API-format workflow (a mapping of node id to {class_type, inputs})',
    },
    mapping: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['node', 'field'],
        properties: { node: nodeRef, field: inputName, on_empty: { enum: ['placeholder', 'required', 'disable'] } },
      },
    },
    fixed: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['node', 'field', 'value'],
        properties: { node: nodeRef, field: inputName, value: {} },
      },
      hint: 'must be a list of {node, field, value}',
    },
    bypass: { type: 'array', items: nodeRef, hint: 'must be a list of node ids' },
    output: nodeRef,
    max_pixels: { type: 'integer', minimum: 1, hint: 'must be a whole number of pixels (width × height), at least 1' },
    max_n: { type: 'integer', minimum: 1, hint: 'must be a whole number of results, at least 1' },
  },
} as const;

/** Top-level keys of the media layer. */
export const mediaTopLevelProperties = {
  image_models: {
    type: 'object',
    default: {},
    additionalProperties: {
      type: 'array',
      minItems: 1,
      items: imageModelEntrySchema,
      hint:
        'must be a non-empty list of candidates, each {backend, workflow | workflow_json, ' +
        'mapping?, fixed?, bypass?, output?, max_pixels?, max_n?}',
    },
  },
  media_park_timeout_s: { ...nonNegativeSeconds, default: DEFAULTS.media_park_timeout_s },
  job_ttl_h: { type: 'number', exclusiveMinimum: 0, default: DEFAULTS.job_ttl_h },
  ref_url_allow_private: { type: 'boolean', default: DEFAULTS.ref_url_allow_private },
  max_upload_bytes_inflight: { type: 'integer', minimum: 0, default: DEFAULTS.max_upload_bytes_inflight },
  gpu_groups: {
    type: 'object',
    default: {},
    additionalProperties: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max_concurrent: { type: 'integer', minimum: 1, default: GPU_GROUP_DEFAULTS.max_concurrent },
        unload_llm: { type: 'boolean', default: GPU_GROUP_DEFAULTS.unload_llm },
        free_media: { type: 'boolean', default: GPU_GROUP_DEFAULTS.free_media },
      },
    },
  },
} as const;

/** Where an `image_models` value comes from: config.yaml (a `workflow` file is read next) or the store. */
export type ImageModelsSource = 'file' | 'store';

/**
 * What is wrong with a raw `image_models` value, given the backends it may name (name →
 * type). Node refs written as numbers become strings (so `raw` is mutated). Defensive: `raw`
 * may be invalid in other ways, which the schema reports.
 */
export function imageModelsProblems(
  raw: unknown,
  backends: ReadonlyMap<string, string>,
  source: ImageModelsSource,
): ConfigProblem[] {
  if (!isObject(raw)) return [];
  const problems: ConfigProblem[] = [];
  const comfy = [...backends].filter(([, type]) => type === 'comfyui').map(([name]) => name);
  for (const [alias, entries] of Object.entries(raw)) {
    const aliasPath = childPath('image_models', alias);
    if (!/^\S+$/.test(alias))
      problems.push({ path: aliasPath, message: 'an alias name must be non-empty and contain no whitespace' });
    if (!Array.isArray(entries)) continue;
    const seen = new Map<string, number>();
    entries.forEach((entry, i) => {
      if (!isObject(entry)) return;
      const at = childPath(aliasPath, i);
      normalizeNodeRefs(entry);
      if (typeof entry.backend === 'string') {
        const problem = backendProblem(entry.backend, backends, comfy, seen.get(entry.backend), aliasPath);
        if (problem) problems.push({ path: childPath(at, 'backend'), message: problem });
        if (!seen.has(entry.backend)) seen.set(entry.backend, i);
      }
      problems.push(...workflowSourceProblems(entry, at, source));
    });
  }
  return problems;
}

function backendProblem(
  name: string,
  backends: ReadonlyMap<string, string>,
  comfy: string[],
  duplicateOf: number | undefined,
  aliasPath: string,
): string | undefined {
  if (duplicateOf !== undefined)
    return (
      `backend "${name}" already has an entry in this alias ` +
      `(${childPath(aliasPath, duplicateOf)}); one entry per backend`
    );
  const type = backends.get(name);
  const known = `known comfyui backends: ${comfy.join(', ') || 'none'}`;
  if (type === undefined) return `names no backend in backends[] (${known})`;
  if (type !== 'comfyui')
    return `"${name}" is a backend of type ${type}; generation aliases run on comfyui backends (${known})`;
  return undefined;
}

function workflowSourceProblems(
  entry: Record<string, unknown>,
  at: string,
  source: ImageModelsSource,
): ConfigProblem[] {
  const hasFile = entry.workflow !== undefined;
  const hasJson = entry.workflow_json !== undefined;
  if (source === 'file' && hasFile === hasJson) {
    return [
      {
        path: at,
        message: hasFile
          ? 'give either workflow (a file) or workflow_json, not both'
          : 'needs a workflow: workflow (a file relative to config.yaml) or workflow_json',
      },
    ];
  }
  if (source === 'store' && !hasJson) {
    return hasFile
      ? [
          {
            path: childPath(at, 'workflow'),
            message:
              'a stored image model cannot name a workflow file (there is no config.yaml folder to ' +
              'resolve it against); store the workflow itself in workflow_json',
          },
        ]
      : [{ path: childPath(at, 'workflow_json'), message: 'is required (the API-format workflow)' }];
  }
  if (hasJson && isObject(entry.workflow_json)) {
    const message = workflowShapeProblem(entry.workflow_json);
    if (message) return [{ path: childPath(at, 'workflow_json'), message }];
  }
  return [];
}

/**
 * Why `value` is not a ComfyUI API-format workflow (an object of nodes, each with a string
 * `class_type` and an object `inputs`), or undefined when it is one.
 */
export function workflowShapeProblem(value: unknown): string | undefined {
  if (!isObject(value))
    return 'must be a ComfyUI API-format workflow: a JSON object of node id to {class_type, inputs}';
  if (Array.isArray(value.nodes) && Array.isArray(value.links))
    return "this is ComfyUI's UI format; export it with 'Export (API)'";
  const nodes = Object.entries(value);
  if (nodes.length === 0) return 'has no nodes';
  for (const [id, node] of nodes) {
    if (!isObject(node) || typeof node.class_type !== 'string' || !isObject(node.inputs)) {
      return (
        `node ${JSON.stringify(id)} is not {class_type, inputs}: this is not an API-format ` +
        `workflow (export it with 'Export (API)')`
      );
    }
  }
  return undefined;
}

/** `node: 61`, `bypass: [25]`, `output: 9` → the strings ComfyUI's node ids are. */
function normalizeNodeRefs(entry: Record<string, unknown>): void {
  const str = (v: unknown) => (typeof v === 'number' ? String(v) : v);
  const refs = [
    ...(isObject(entry.mapping) ? Object.values(entry.mapping) : []),
    ...(Array.isArray(entry.fixed) ? entry.fixed : []),
  ];
  for (const ref of refs) if (isObject(ref) && typeof ref.node === 'number') ref.node = String(ref.node);
  if (Array.isArray(entry.bypass)) entry.bypass = entry.bypass.map(str);
  if (typeof entry.output === 'number') entry.output = String(entry.output);
}
