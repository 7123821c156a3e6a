/**
 * One ComfyUI backend, as the gateway's media jobs use it: upload inputs, submit a workflow
 * (its JSON text spliced in unchanged, so big integers survive), follow it, fetch its files.
 *
 * `/history` is the source of truth: `waitFor` polls it every `pollMs` and resolves when the
 * entry appears; websocket events (comfy-progress.ts) only make it poll at once. Every method
 * answers with a typed result and never throws (style of upstream/forward.ts).
 */
import { randomUUID } from 'node:crypto';
import { FormData, request, type Dispatcher } from 'undici';
import { describeError } from '../backends/errors.ts';
import { ComfyProgress, type ComfyLog, type ComfyProgressListener } from './comfy-progress.ts';

export type { ComfyProgressEvent, ComfyProgressListener } from './comfy-progress.ts';

export interface ComfyClientOptions {
  /** http(s)://host:port[/prefix] of the ComfyUI server. */
  baseUrl: string;
  dispatcher?: Dispatcher;
  /** The gateway's own client id (one random uuid per gateway). */
  clientId: string;
  /** Idle timeout for every HTTP answer (headers, and between body chunks), and the ws handshake. */
  readTimeoutMs: number;
  log?: ComfyLog;
  /** Largest file `view` reads (bytes). Default 1 GiB. */
  maxViewBytes?: number;
  /** Websocket reconnect backoff (ms): default 500 doubling to 10 000. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Ask for previews with metadata (type 4, prompt id included). Default true. */
  previewMetadata?: boolean;
}

export interface ComfyHistoryEntry {
  prompt?: unknown[];
  outputs?: Record<string, Record<string, unknown>>;
  status?: { status_str?: string; completed?: boolean; messages?: Array<[string, Record<string, any>]> };
  meta?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ComfyFileRef { node: string; /** The ui key it came from: images, gifs, audio, 3d… */ key: string; filename: string; subfolder: string; type: string }

export type UploadResult = { ok: true; name: string; subfolder: string } | { ok: false; status?: number; error: string };
export type SubmitResult =
  | { ok: true; promptId: string; number: number; /** Outputs that failed validation while others were queued. */ nodeErrors?: Record<string, unknown> }
  /** `status` 0: no answer (refused, reset, timed out). `type`: ComfyUI's `error.type` (prompt_outputs_failed_validation…). */
  | { ok: false; status: number; error: string; type?: string; nodeErrors?: Record<string, unknown> };
export type ViewResult = { ok: true; bytes: Buffer; contentType: string } | { ok: false; status?: number; error: string };
export type PlainResult = { ok: true } | { ok: false; error: string };
export type QueueResult = { ok: true; running: string[]; pending: string[] } | { ok: false; error: string };

export interface WaitOptions {
  /** Poll /history this often (ms), websocket or not. */
  pollMs: number;
  /** Then: interrupt / dequeue the prompt and answer `timeout`. */
  maxWaitMs: number;
  /** Cancel: dequeue (pending) and interrupt (running) the prompt, answer `interrupted`. */
  signal?: AbortSignal;
  /** No answer from the server for this long → `unreachable`. Default 30 000. */
  unreachableAfterMs?: number;
  /** Every this many polls without an entry, /queue is checked too: neither queued nor in history → `lost`. Default 5. */
  queueCheckEvery?: number;
  /** Checked every poll: a reason (the box was marked stuck…) dequeues and interrupts the prompt and answers `abandoned`. */
  abandonIf?: () => string | undefined;
}

export type WaitResult =
  | { kind: 'done'; entry: ComfyHistoryEntry }
  | { kind: 'failed'; message: string; node?: string }
  | { kind: 'interrupted' }
  | { kind: 'timeout' }
  | { kind: 'unreachable'; error: string }
  /** The server no longer knows the prompt (it restarted): not queued, not running, no history. */
  | { kind: 'lost' }
  | { kind: 'abandoned'; reason: string };

type HttpResult = { ok: true; status: number; contentType: string; text: string } | { ok: false; error: string };

const DEFAULT_MAX_VIEW = 1024 ** 3;

export class ComfyClient {
  private readonly base: string;
  private readonly progress: ComfyProgress;

  constructor(private readonly opts: ComfyClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    const ws = new URL(`${this.base}/ws`);
    ws.protocol = ws.protocol === 'https:' ? 'wss:' : 'ws:';
    ws.searchParams.set('clientId', opts.clientId);
    this.progress = new ComfyProgress({
      url: ws.toString(), handshakeTimeoutMs: opts.readTimeoutMs, log: opts.log,
      minBackoffMs: opts.minBackoffMs, maxBackoffMs: opts.maxBackoffMs, previewMetadata: opts.previewMetadata,
    });
  }

  /** The websocket is open now. */
  get watching(): boolean {
    return this.progress.connected;
  }

  /** Times the websocket opened (reconnects included). */
  get wsOpens(): number {
    return this.progress.opens;
  }

  /** Opens the progress websocket and keeps it open (reconnecting) until `close()`. */
  watch(): void {
    this.progress.start();
  }

  /** Events of one of our prompts; events since submit are replayed to the first listener. */
  onProgress(promptId: string, listener: ComfyProgressListener): () => void {
    return this.progress.on(promptId, listener);
  }

  latestPreview(promptId: string): { mime: string; bytes: Buffer } | undefined {
    return this.progress.latestPreview(promptId);
  }

  /** Stops following a prompt (waitFor does it when it returns). */
  forget(promptId: string): void {
    this.progress.forget(promptId);
  }

  close(): void {
    this.progress.close();
  }

  // ---- HTTP ------------------------------------------------------------------------------------

  /** `POST /upload/image`, type input, overwrite: `name` is the job's own (never shared). */
  async upload(name: string, bytes: Buffer | Uint8Array, mime: string): Promise<UploadResult> {
    const form = new FormData();
    form.append('image', new Blob([new Uint8Array(bytes)], { type: mime }), name);
    form.append('type', 'input');
    form.append('overwrite', 'true');
    const res = await this.call('POST', '/upload/image', form);
    if (!res.ok) return { ok: false, error: res.error };
    if (res.status !== 200) return { ok: false, status: res.status, error: `upload answered ${res.status}: ${res.text.slice(0, 200)}` };
    const body = parseObject(res.text);
    if (!body || typeof body.name !== 'string') return { ok: false, status: 200, error: `upload answered without a name: ${res.text.slice(0, 200)}` };
    return { ok: true, name: body.name, subfolder: typeof body.subfolder === 'string' ? body.subfolder : '' };
  }

  /**
   * `POST /prompt {prompt, client_id, prompt_id}`; `prompt` is the API-format workflow's JSON
   * text, put in the body as is. The prompt id is ours (a new uuid unless given), tracked before
   * sending so that no early websocket event is lost.
   */
  async submit(prompt: string, promptId: string = randomUUID()): Promise<SubmitResult> {
    const text = prompt.trim();
    if (!isJsonObjectText(text)) return { ok: false, status: 0, error: 'the prompt is not the JSON text of an object' };
    const body = `{"prompt":${text},"client_id":${JSON.stringify(this.opts.clientId)},"prompt_id":${JSON.stringify(promptId)}}`;
    this.progress.track(promptId);
    const res = await this.call('POST', '/prompt', body, 'application/json');
    if (!res.ok) { this.progress.forget(promptId); return { ok: false, status: 0, error: res.error }; }
    const json = parseObject(res.text);
    if (res.status !== 200 || !json || typeof json.prompt_id !== 'string') {
      this.progress.forget(promptId);
      const err = json?.error as { type?: unknown; message?: unknown; details?: unknown } | string | undefined;
      const type = typeof err === 'object' && err !== null && typeof err.type === 'string' ? err.type : undefined;
      const message = typeof err === 'object' && err !== null
        ? [err.message, err.details].filter((s) => typeof s === 'string' && s !== '').join(': ')
        : typeof err === 'string' ? err : res.text.slice(0, 200);
      const nodeErrors = isObject(json?.node_errors) && Object.keys(json.node_errors).length > 0 ? json.node_errors : undefined;
      return { ok: false, status: res.status, error: message || `POST /prompt answered ${res.status}`, ...(type ? { type } : {}), ...(nodeErrors ? { nodeErrors } : {}) };
    }
    if (json.prompt_id !== promptId) { // an older server that picks its own id
      this.progress.forget(promptId);
      this.progress.track(json.prompt_id);
    }
    const nodeErrors = isObject(json.node_errors) && Object.keys(json.node_errors).length > 0 ? json.node_errors : undefined;
    return { ok: true, promptId: json.prompt_id, number: Number(json.number), ...(nodeErrors ? { nodeErrors } : {}) };
  }

  /** `GET /history/{id}`: the entry once the prompt finished, else undefined (also when unreachable). */
  async history(promptId: string): Promise<ComfyHistoryEntry | undefined> {
    const h = await this.historyResult(promptId);
    return h.ok ? h.entry : undefined;
  }

  /** `GET /view`, read whole into a Buffer (at most `maxViewBytes`). */
  async view(file: { filename: string; subfolder?: string; type?: string }): Promise<ViewResult> {
    const q = new URLSearchParams({ filename: file.filename, subfolder: file.subfolder ?? '', type: file.type ?? 'output' });
    const limit = this.opts.maxViewBytes ?? DEFAULT_MAX_VIEW;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.base}/view?${q}`, this.requestOptions('GET'));
    } catch (err) {
      return { ok: false, error: describeError(err).detail };
    }
    try {
      if (res.statusCode !== 200) return { ok: false, status: res.statusCode, error: `view answered ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}` };
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > limit) {
        discard(res.body);
        return { ok: false, status: 200, error: `file ${file.filename} is ${declared} bytes, over the ${limit} byte limit` };
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > limit) {
          discard(res.body);
          return { ok: false, status: 200, error: `file ${file.filename} is over the ${limit} byte limit` };
        }
        chunks.push(chunk as Buffer);
      }
      return { ok: true, bytes: Buffer.concat(chunks, size), contentType: String(res.headers['content-type'] ?? 'application/octet-stream') };
    } catch (err) {
      discard(res.body);
      return { ok: false, error: describeError(err).detail };
    }
  }

  /** Targeted `POST /interrupt {prompt_id}`: stops the prompt only if it is the one running. */
  interrupt(promptId: string): Promise<PlainResult> {
    return this.plain('/interrupt', { prompt_id: promptId });
  }

  /** `POST /queue {delete: [id]}`: removes the prompt if it is still pending. */
  dequeue(promptId: string): Promise<PlainResult> {
    return this.plain('/queue', { delete: [promptId] });
  }

  /** `GET /queue`: prompt ids running, and pending in run order. */
  async queue(): Promise<QueueResult> {
    const res = await this.call('GET', '/queue');
    if (!res.ok) return { ok: false, error: res.error };
    const json = res.status === 200 ? parseObject(res.text) : undefined;
    if (!json) return { ok: false, error: `GET /queue answered ${res.status}: ${res.text.slice(0, 200)}` };
    const items = (v: unknown) => (Array.isArray(v) ? v.filter((i): i is unknown[] => Array.isArray(i) && typeof i[1] === 'string') : []);
    const pending = items(json.queue_pending).sort((a, b) => Number(a[0]) - Number(b[0]));
    return { ok: true, running: items(json.queue_running).map((i) => i[1] as string), pending: pending.map((i) => i[1] as string) };
  }

  /** Every file a history entry's outputs name: any list-valued ui key, any dict with a filename. */
  outputs(entry: ComfyHistoryEntry): ComfyFileRef[] {
    const files: ComfyFileRef[] = [];
    for (const [node, ui] of Object.entries(entry.outputs ?? {})) {
      if (!isObject(ui)) continue;
      for (const [key, list] of Object.entries(ui)) {
        if (!Array.isArray(list)) continue;
        for (const item of list) {
          if (!isObject(item) || typeof item.filename !== 'string') continue;
          files.push({ node, key, filename: item.filename, subfolder: typeof item.subfolder === 'string' ? item.subfolder : '', type: typeof item.type === 'string' ? item.type : 'output' });
        }
      }
    }
    return files;
  }

  // ---- waiting -----------------------------------------------------------------------------------

  /** Waits for a submitted prompt's history entry (see WaitOptions); forgets the prompt's progress after. */
  async waitFor(promptId: string, o: WaitOptions): Promise<WaitResult> {
    const deadline = Date.now() + o.maxWaitMs;
    const unreachableAfter = o.unreachableAfterMs ?? 30_000;
    const queueEvery = o.queueCheckEvery ?? 5;
    let hinted = false;
    let wake: (() => void) | undefined;
    const kick = () => { hinted = true; wake?.(); };
    const unsubscribe = this.onProgress(promptId, (e) => { if (e.kind === 'success' || e.kind === 'error' || e.kind === 'interrupted') kick(); });
    o.signal?.addEventListener('abort', kick);
    try {
      let failingSince: number | undefined;
      let polls = 0;
      for (;;) {
        if (o.signal?.aborted) { await this.cancel(promptId); return { kind: 'interrupted' }; }
        hinted = false;
        const h = await this.historyResult(promptId);
        if (h.ok) {
          failingSince = undefined;
          if (h.entry) return settled(h.entry);
          if (++polls % queueEvery === 0 && (await this.isLost(promptId))) return { kind: 'lost' };
        } else {
          failingSince ??= Date.now();
          if (Date.now() - failingSince >= unreachableAfter) return { kind: 'unreachable', error: h.error };
        }
        if (o.signal?.aborted) continue;
        const abandon = o.abandonIf?.();
        if (abandon !== undefined) { await this.cancel(promptId); return { kind: 'abandoned', reason: abandon }; }
        const left = deadline - Date.now();
        if (left <= 0) { await this.cancel(promptId); return { kind: 'timeout' }; }
        if (!hinted) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, Math.min(o.pollMs, left));
            function done() { clearTimeout(timer); wake = undefined; resolve(); }
            wake = done;
          });
        }
      }
    } finally {
      unsubscribe();
      o.signal?.removeEventListener('abort', kick);
      this.progress.forget(promptId);
    }
  }

  /** Pending: removed from the queue; running: interrupted (dequeue first, so it cannot start in between). */
  private async cancel(promptId: string): Promise<void> {
    const d = await this.dequeue(promptId);
    const i = await this.interrupt(promptId);
    if (!d.ok || !i.ok) this.opts.log?.warn({ promptId, error: !d.ok ? d.error : !i.ok ? i.error : '' }, 'comfyui: cancelling a prompt failed');
  }

  /** Not running, not pending, and (checked again after the queue) no history entry. */
  private async isLost(promptId: string): Promise<boolean> {
    const q = await this.queue();
    if (!q.ok || q.running.includes(promptId) || q.pending.includes(promptId)) return false;
    const h = await this.historyResult(promptId);
    return h.ok && h.entry === undefined;
  }

  private async historyResult(promptId: string): Promise<{ ok: true; entry?: ComfyHistoryEntry } | { ok: false; error: string }> {
    const res = await this.call('GET', `/history/${encodeURIComponent(promptId)}`);
    if (!res.ok) return res;
    const json = res.status === 200 ? parseObject(res.text) : undefined;
    if (!json) return { ok: false, error: `GET /history answered ${res.status}: ${res.text.slice(0, 200)}` };
    const entry = json[promptId];
    return { ok: true, entry: isObject(entry) ? (entry as ComfyHistoryEntry) : undefined };
  }

  private async plain(path: string, body: unknown): Promise<PlainResult> {
    const res = await this.call('POST', path, JSON.stringify(body), 'application/json');
    if (!res.ok) return res;
    return res.status === 200 ? { ok: true } : { ok: false, error: `POST ${path} answered ${res.status}: ${res.text.slice(0, 200)}` };
  }

  private requestOptions(method: 'GET' | 'POST', body?: string | FormData, contentType?: string) {
    return {
      method,
      dispatcher: this.opts.dispatcher,
      headers: contentType ? { 'content-type': contentType, accept: 'application/json' } : { accept: '*/*' },
      body,
      headersTimeout: this.opts.readTimeoutMs,
      bodyTimeout: this.opts.readTimeoutMs,
    };
  }

  private async call(method: 'GET' | 'POST', path: string, body?: string | FormData, contentType?: string): Promise<HttpResult> {
    try {
      const res = await request(`${this.base}${path}`, this.requestOptions(method, body, contentType));
      const text = await res.body.text();
      return { ok: true, status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), text };
    } catch (err) {
      return { ok: false, error: describeError(err).detail };
    }
  }
}

/** A finished prompt's history entry → the wait's answer. */
function settled(entry: ComfyHistoryEntry): WaitResult {
  const status = entry.status;
  if (!status || status.status_str === 'success') return { kind: 'done', entry };
  const messages = Array.isArray(status.messages) ? status.messages : [];
  if (messages.some((m) => Array.isArray(m) && m[0] === 'execution_interrupted')) return { kind: 'interrupted' };
  const err = messages.find((m) => Array.isArray(m) && m[0] === 'execution_error')?.[1];
  if (err) {
    const message = String(err.exception_message ?? err.exception_type ?? 'execution error');
    return err.node_id !== undefined && err.node_id !== null ? { kind: 'failed', message, node: String(err.node_id) } : { kind: 'failed', message };
  }
  return { kind: 'failed', message: `ComfyUI ended the prompt with status ${String(status.status_str)}` };
}

/** Drops an unread body (destroy() alone emits an error nobody listens to). */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseObject(text: string): Record<string, any> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Checked without keeping the parse: the text itself is what is sent. */
function isJsonObjectText(text: string): boolean {
  if (!text.startsWith('{')) return false;
  try {
    return isObject(JSON.parse(text));
  } catch {
    return false;
  }
}
