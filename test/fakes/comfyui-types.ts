/** Public types of the fake ComfyUI server (comfyui-server.ts). */
import type { ObjectInfo } from './comfyui-nodes.ts';
import type { ManagerFlavour } from './comfyui-manager.ts';

export interface ComfyKnobs {
  /** Time per sampler step (ms). */
  stepMs: number;
  /** Steps per sampler node (KSampler, KSamplerAdvanced, SamplerCustom*); 0 = the node's own `steps` input. */
  steps: number;
  /** Time each non-sampler node takes (ms); 0 = none. */
  nodeMs: number;
  /** Binary preview frames (type 1 + PNG, or type 4 for clients that announced supports_preview_metadata) on every sampler step. */
  previews: boolean;
  /** A node id whose execution fails with `execution_error` (RuntimeError). */
  failNode?: string;
  /** The exception message failNode's error carries (default: names the node and the knob). */
  failMessage?: string;
  /** Accept prompts but never start one: the head stays pending, the executor idle. Setting it false resumes. */
  stuck: boolean;
  /**
   * A server being restarted: setting it true drops every websocket, the queue (the running prompt
   * ends without a history entry) and the history; while true HTTP answers 503 and /ws upgrades are
   * refused with 503. Setting it false brings it back empty. See also `restart()`.
   */
  restarting: boolean;
  /** Reset new connections at once, like a dead host. */
  refuse: boolean;
  /** Delay before every HTTP answer (ms). */
  latencyMs: number;
  /** A further delay before storing and answering an upload (POST /upload/image|mask), its body already read (ms). */
  uploadMs: number;
  /** Check combo values (model names, sampler names…) against object_info (`value_not_in_list`). */
  validateCombos: boolean;
  /**
   * Where a LoadImage file that is not in the input folder is caught. 'validation' (real ComfyUI:
   * LoadImage.VALIDATE_INPUTS → 400 `custom_validation_failed`) or 'execution' (the file went
   * missing after validation → `execution_error` FileNotFoundError at that node).
   */
  missingUpload: 'validation' | 'execution';
  /**
   * Execution cache as in ComfyUI: a node whose class and inputs (upstream included) ran before is
   * listed in `execution_cached` and not run again; cached output nodes re-send their `executed`.
   * POST /free {free_memory: true} and restarts empty it.
   */
  cache: boolean;
  /** Unknown class_type answered the pre-2025 way (`invalid_prompt`) instead of `missing_node_type`. */
  legacyMissingNode: boolean;
  /** Which ComfyUI-Manager reboot route exists (comfyui-manager.ts); a reboot clears `stuck` and restarts. */
  manager: ManagerFlavour;
}

export const DEFAULT_COMFY_KNOBS: ComfyKnobs = {
  stepMs: 20,
  steps: 4,
  nodeMs: 0,
  previews: false,
  failNode: undefined,
  stuck: false,
  restarting: false,
  refuse: false,
  latencyMs: 0,
  uploadMs: 0,
  validateCombos: true,
  missingUpload: 'validation',
  legacyMissingNode: false,
  cache: true,
  manager: 'none',
};

export interface RecordedComfyRequest {
  method: string;
  /** As sent, `/api` prefix included. */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON; for multipart `{fields, files: {field: {filename, size}}}`; else the text (or undefined when empty). */
  body: unknown;
  rawBody: Buffer;
  /** A websocket upgrade (GET /ws). */
  ws?: boolean;
}

export type ComfyPromptStatus = 'pending' | 'running' | 'success' | 'error' | 'interrupted' | 'deleted' | 'dropped';

export interface ComfyPromptRecord {
  id: string;
  number: number;
  clientId: string | null;
  prompt: Record<string, any>;
  extraData: Record<string, unknown>;
  /** Output node ids that validated (outputs_to_execute). */
  outputs: string[];
  /** `dropped`: lost in a restart; `deleted`: removed from the queue by POST /queue. */
  status: ComfyPromptStatus;
  submittedAt: number;
  startedAt?: number;
  endedAt?: number;
}

export interface ComfyFake {
  url: string;
  port: number;
  knobs: ComfyKnobs;
  setKnobs(patch: Partial<ComfyKnobs>): void;
  requests: RecordedComfyRequest[];
  /** Every accepted prompt, in submission order. */
  prompts: ComfyPromptRecord[];
  /** Uploaded files by name (`subfolder/name` when a subfolder was given), as stored after renaming. */
  uploads: Map<string, Buffer>;
  /** Every file /view can serve, keyed `type/subfolder/filename` (`type/filename` without subfolder). */
  files: Map<string, Buffer>;
  /** The object_info being served (mutable). */
  objectInfo: ObjectInfo;
  /** Client ids with an open websocket. */
  wsClients(): string[];
  /** Global interrupts and targeted ones that hit, counted. */
  interrupts(): number;
  /**
   * Restarts the server: drops every socket and the queue and history, is down for `downMs`
   * (`mode` 'refused': not listening, so ECONNREFUSED; '503': answers 503), then comes back empty.
   * Resolves when it is back.
   */
  restart(opts?: { downMs?: number; mode?: 'refused' | '503' }): Promise<void>;
  close(): Promise<void>;
}

export interface StartComfyFakeOptions {
  /** Default: fakeObjectInfo() (core classes + the fixture workflows' custom nodes). */
  objectInfo?: ObjectInfo;
  knobs?: Partial<ComfyKnobs>;
  port?: number;
}
