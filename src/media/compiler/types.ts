/**
 * The shapes the workflow compiler reads and writes. A workflow is ComfyUI's API format
 * (`POST /prompt`'s `prompt`): `{ "<node id>": { class_type, inputs, _meta? } }`, where an
 * input whose value is a two-element `[string, number]` array is a link to another node's
 * output, never a literal. Everything here is plain data: no I/O, nothing from fastify.
 */

export type { Link, Mapping, MappingEntry, OnEmpty, Pin, Workflow, WorkflowNode } from '../../config/workflow-types.ts';
import type { Link, Mapping, Pin, Workflow } from '../../config/workflow-types.ts';

export interface GenerationAlias {
  workflow: Workflow;
  mapping?: Mapping;
  fixed?: Pin[];
  /** Nodes to skip, ComfyUI-style (each consumer is rewired to the node's matching input). */
  bypass?: string[];
  /** The one node whose files are the answer; else every output node that survives. */
  output?: string;
}

/** One input's declaration in `/object_info`: `[type, options?]`; a legacy combo's type is its list. */
export type InputSpec = [unknown, Record<string, unknown>?];

export interface NodeClassInfo {
  input?: {
    required?: Record<string, InputSpec>;
    optional?: Record<string, InputSpec>;
    hidden?: Record<string, unknown>;
  };
  input_order?: { required?: string[]; optional?: string[] };
  output?: string[];
  output_node?: boolean;
  [key: string]: unknown;
}

/** A `GET /object_info` response: class name → declaration. */
export type ObjectInfo = Record<string, NodeClassInfo>;

export type Severity = 'error' | 'warning';

/** A config problem, with the key path an operator can find it at. */
export interface Problem {
  path: string;
  message: string;
  severity: Severity;
}

/** A request's parameters, already separated from the API envelope (model, response_format…). */
export type CompileRequest = Record<string, unknown>;

export interface CompileContext {
  /** Names the uploaded files (`gw_<jobId>_<param>.<ext>`), so concurrent jobs never share one. */
  jobId: string;
  /**
   * The files this request carries (image slots and any other file input), by param, with the
   * extension of the file the caller will upload.
   */
  images?: Record<string, { ext: string }>;
  /** The chosen backend's `/object_info`, when known: types, combos, required inputs, output nodes. */
  objectInfo?: ObjectInfo;
  /** `[0, 1)`, for the seed when the request has none; `Math.random` when absent. */
  random?: () => number;
}

/** A file the caller must `POST /upload/image` before queueing the prompt. */
export interface Upload {
  param: string;
  node: string;
  field: string;
  /** The name to upload under (and the one written into the field). */
  name: string;
  /** True when this is the shared 8×8 placeholder, not a file the client sent. */
  placeholder?: true;
}

export interface CompileError {
  /** 400: the request is at fault. 500: the alias is (validateAlias would have said so). */
  status: 400 | 500;
  message: string;
  /** The request parameter (or alias key) at fault. */
  param?: string;
}

export type CompileResult =
  | {
      ok: true;
      /** The graph to POST; large integers are `bigint`, so serialise it with `promptJson`'s writer. */
      prompt: Workflow;
      /** `prompt` as JSON text with every integer written exactly. */
      promptJson: string;
      /** The seed used, as decimal text (exact beyond 2^53); absent when the workflow maps none. */
      seed?: string;
      removed: string[];
      bypassed: string[];
      outputs: string[];
      uploads: Upload[];
      /** What the compiler had to assume (missing object_info, guessed pass-throughs). */
      notes: string[];
    }
  | { ok: false; error: CompileError };

/** A `[string, number]` pair: ComfyUI reads it as a link, whatever was meant. */
export function isLink(value: unknown): value is Link {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'number';
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
