/**
 * ComfyUI's answers as the client reads them: the shapes of its history entries and of each
 * call's result, and the pure readers of its JSON (history outputs, the queue's lists).
 * Shared by client.ts and wait.ts, so neither imports the other for a type.
 */
import { isObject } from '../../json.ts';

/** A call's own stop: the job's cancel and a bound on the whole exchange (`AbortSignal.any`). */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface ComfyHistoryEntry {
  prompt?: unknown[];
  outputs?: Record<string, Record<string, unknown>>;
  status?: { status_str?: string; completed?: boolean; messages?: Array<[string, Record<string, any>]> };
  meta?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ComfyFileRef {
  node: string;
  /** The ui key it came from: images, gifs, audio, 3d… */ key: string;
  filename: string;
  subfolder: string;
  type: string;
}

export type UploadResult =
  { ok: true; name: string; subfolder: string } | { ok: false; status?: number; error: string };
export type SubmitResult =
  | {
      ok: true;
      promptId: string;
      number: number;
      /** Outputs that failed validation while others were queued. */ nodeErrors?: Record<string, unknown>;
    }
  /**
   * `status` 0: no answer (refused, reset, timed out). `type`: ComfyUI's `error.type`
   * (prompt_outputs_failed_validation…).
   */
  | { ok: false; status: number; error: string; type?: string; nodeErrors?: Record<string, unknown> };
export type ViewResult =
  { ok: true; bytes: Buffer; contentType: string } | { ok: false; status?: number; error: string };
export type PlainResult = { ok: true } | { ok: false; error: string };
export type QueueResult = { ok: true; running: string[]; pending: string[] } | { ok: false; error: string };

/** Every file a history entry's outputs name: any list-valued ui key, any dict with a filename. */
export function outputFiles(entry: ComfyHistoryEntry): ComfyFileRef[] {
  const files: ComfyFileRef[] = [];
  for (const [node, ui] of Object.entries(entry.outputs ?? {})) {
    if (!isObject(ui)) continue;
    for (const [key, list] of Object.entries(ui)) {
      if (!Array.isArray(list)) continue;
      for (const item of list) {
        if (!isObject(item) || typeof item.filename !== 'string') continue;
        files.push({
          node,
          key,
          filename: item.filename,
          subfolder: typeof item.subfolder === 'string' ? item.subfolder : '',
          type: typeof item.type === 'string' ? item.type : 'output',
        });
      }
    }
  }
  return files;
}

/** `GET /queue`'s JSON as prompt ids: running, and pending in run order. */
export function queueLists(json: Record<string, any>): QueueResult {
  const items = (v: unknown) =>
    Array.isArray(v) ? v.filter((i): i is unknown[] => Array.isArray(i) && typeof i[1] === 'string') : [];
  const pending = items(json.queue_pending).sort((a, b) => Number(a[0]) - Number(b[0]));
  return {
    ok: true,
    running: items(json.queue_running).map((i) => i[1] as string),
    pending: pending.map((i) => i[1] as string),
  };
}

/** Checked without keeping the parse: the text itself is what is sent. */
export function isJsonObjectText(text: string): boolean {
  if (!text.startsWith('{')) return false;
  try {
    return isObject(JSON.parse(text));
  } catch {
    return false;
  }
}
