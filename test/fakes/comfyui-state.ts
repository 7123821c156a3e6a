/**
 * The fake ComfyUI's state (comfyui-server.ts): what it was sent, its files, its queue, the prompt
 * running, its history and node cache. One object per fake, shared by its routes, its executor
 * and its websockets.
 */
import { fakeObjectInfo, type ObjectInfo } from './comfyui-nodes.ts';
import { fakePng } from './comfyui-media.ts';
import {
  DEFAULT_COMFY_KNOBS,
  type ComfyKnobs,
  type ComfyPromptRecord,
  type RecordedComfyRequest,
  type StartComfyFakeOptions,
} from './comfyui-types.ts';

/** What GET /features answers (the 0.27.0 capture, `extension.manager` emptied by the fixture). */
export const COMFY_FEATURES = {
  supports_preview_metadata: true,
  max_upload_size: 104857600,
  node_replacements: true,
  assets: false,
  extension: { manager: {} },
};

export const COMFY_VERSION = '0.27.0';

const SENSITIVE = ['auth_token_comfy_org', 'api_key_comfy_org'];

/** The prompt executing now, and why it is being stopped. */
export interface RunningPrompt {
  record: ComfyPromptRecord;
  abort: AbortController;
  reason?: 'interrupt' | 'dropped';
  lastNode?: string;
}

export interface ComfyFakeState {
  objectInfo: ObjectInfo;
  knobs: ComfyKnobs;
  requests: RecordedComfyRequest[];
  prompts: ComfyPromptRecord[];
  uploads: Map<string, Buffer>;
  /** Every file /view can serve, keyed by fileKey(). */
  files: Map<string, Buffer>;
  pending: ComfyPromptRecord[];
  running?: RunningPrompt;
  history: Map<string, Record<string, unknown>>;
  cache: Map<string, { ui?: Record<string, unknown> }>;
  /** The next file number per output prefix. */
  counters: Map<string, number>;
  /** The next queue number. */
  number: number;
  interruptCount: number;
  down: 'no' | '503' | 'refused';
}

export function newComfyState(opts: StartComfyFakeOptions): ComfyFakeState {
  const files = new Map<string, Buffer>();
  // A fresh ComfyUI install ships input/example.png.
  files.set(fileKey('input', '', 'example.png'), fakePng('example.png', { size: 16 }));
  return {
    objectInfo: opts.objectInfo ?? fakeObjectInfo(),
    knobs: { ...DEFAULT_COMFY_KNOBS, ...opts.knobs },
    requests: [],
    prompts: [],
    uploads: new Map(),
    files,
    pending: [],
    running: undefined,
    history: new Map(),
    cache: new Map(),
    counters: new Map(),
    number: 0,
    interruptCount: 0,
    down: 'no',
  };
}

export const queueRemaining = (s: ComfyFakeState) => s.pending.length + (s.running ? 1 : 0);

export const fileKey = (type: string, subfolder: string, filename: string) =>
  `${type}/${subfolder ? `${subfolder}/` : ''}${filename}`;

export function sanitizeExtra(extra: Record<string, unknown>): Record<string, unknown> {
  const out = { ...extra };
  for (const k of SENSITIVE) delete out[k];
  return out;
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return new Promise((r) => setImmediate(r));
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
