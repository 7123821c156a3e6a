/**
 * One ComfyUI backend, as the gateway's media jobs use it: upload inputs, submit a workflow
 * (its JSON text spliced in unchanged, so big integers survive), follow it, fetch its files.
 *
 * `/history` is the source of truth: `waitFor` (wait.ts) polls it and resolves when the
 * entry appears; websocket events (progress.ts) only make it poll at once. Every method
 * answers with a typed result and never throws (style of upstream/forward.ts). Every request
 * carries the backend's credential; uploads, submits and views take a signal (cancel, and a
 * bound on the whole exchange besides the idle `readTimeoutMs`). A prompt this gateway gave up
 * on while the box did not answer is remembered (`abandoned`) and dequeued and interrupted
 * once the box answers again, before anything new is submitted there.
 */
import { randomUUID } from 'node:crypto';
import { FormData, request, type Dispatcher } from 'undici';
import { describeError } from '../../backends/errors.ts';
import { isObject, parseObject } from '../../json.ts';
import { ComfyProgress, type ComfyLog, type ComfyProgressListener } from './progress.ts';
import {
  isJsonObjectText,
  outputFiles,
  queueLists,
  type CallOptions,
  type ComfyFileRef,
  type ComfyHistoryEntry,
  type PlainResult,
  type QueueResult,
  type SubmitResult,
  type UploadResult,
  type ViewResult,
} from './answers.ts';
import { readViewBody } from './view-read.ts';
import { waitForPrompt, type HistoryAnswer, type WaitOptions, type WaitResult } from './wait.ts';

export type { ComfyProgressEvent, ComfyProgressListener } from './progress.ts';
export type { WaitOptions, WaitResult } from './wait.ts';

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
  /** Sent with every request and the websocket handshake: the backend's credential (`credentialHeaders`). */
  headers?: Record<string, string>;
  /**
   * Prompt ids given up on while the box did not answer, to dequeue and interrupt once it does
   * (ComfyClients keeps one set per backend, so a new client for the box inherits it).
   */
  abandoned?: Set<string>;
}

type HttpResult = { ok: true; status: number; contentType: string; text: string } | { ok: false; error: string };

const DEFAULT_MAX_VIEW = 1024 ** 3;
/** Taking one prompt off a box (dequeue + interrupt) may take this long at most. */
export const CANCEL_TIMEOUT_MS = 5_000;

export class ComfyClient {
  private readonly base: string;
  private readonly progress: ComfyProgress;
  private readonly abandoned: Set<string>;
  private cleaning?: Promise<void>;

  constructor(private readonly opts: ComfyClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.abandoned = opts.abandoned ?? new Set();
    const ws = new URL(`${this.base}/ws`);
    ws.protocol = ws.protocol === 'https:' ? 'wss:' : 'ws:';
    ws.searchParams.set('clientId', opts.clientId);
    this.progress = new ComfyProgress({
      url: ws.toString(),
      handshakeTimeoutMs: opts.readTimeoutMs,
      log: opts.log,
      headers: opts.headers,
      minBackoffMs: opts.minBackoffMs,
      maxBackoffMs: opts.maxBackoffMs,
      previewMetadata: opts.previewMetadata,
      // the box is back: take off what was left on it
      onOpen: () => void this.dropAbandoned(),
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
  async upload(name: string, bytes: Buffer | Uint8Array, mime: string, o: CallOptions = {}): Promise<UploadResult> {
    const form = new FormData();
    form.append('image', new Blob([new Uint8Array(bytes)], { type: mime }), name);
    form.append('type', 'input');
    form.append('overwrite', 'true');
    const res = await this.call('POST', '/upload/image', form, undefined, o.signal);
    if (!res.ok) return { ok: false, error: res.error };
    if (res.status !== 200)
      return { ok: false, status: res.status, error: `upload answered ${res.status}: ${res.text.slice(0, 200)}` };
    const body = parseObject(res.text);
    if (!body || typeof body.name !== 'string')
      return { ok: false, status: 200, error: `upload answered without a name: ${res.text.slice(0, 200)}` };
    return { ok: true, name: body.name, subfolder: typeof body.subfolder === 'string' ? body.subfolder : '' };
  }

  /**
   * `POST /prompt {prompt, client_id, prompt_id}`; `prompt` is the API-format workflow's JSON
   * text, put in the body as is. The prompt id is ours (a new uuid unless given), tracked before
   * sending so that no early websocket event is lost. Prompts abandoned earlier are taken off
   * the box first. No answer (status 0): the prompt may be queued all the same, so it is
   * remembered as abandoned.
   */
  async submit(prompt: string, promptId: string = randomUUID(), o: CallOptions = {}): Promise<SubmitResult> {
    const text = prompt.trim();
    if (!isJsonObjectText(text)) return { ok: false, status: 0, error: 'the prompt is not the JSON text of an object' };
    await this.dropAbandoned();
    if (o.signal?.aborted) return { ok: false, status: 0, error: stopReason(o.signal) };
    const clientId = JSON.stringify(this.opts.clientId);
    const body = `{"prompt":${text},"client_id":${clientId},"prompt_id":${JSON.stringify(promptId)}}`;
    this.progress.track(promptId);
    const res = await this.call('POST', '/prompt', body, 'application/json', o.signal);
    if (!res.ok) {
      this.progress.forget(promptId);
      this.abandon(promptId);
      return { ok: false, status: 0, error: res.error };
    }
    const json = parseObject(res.text);
    if (res.status !== 200 || !json || typeof json.prompt_id !== 'string') {
      this.progress.forget(promptId);
      const err = json?.error as { type?: unknown; message?: unknown; details?: unknown } | string | undefined;
      const type = typeof err === 'object' && err !== null && typeof err.type === 'string' ? err.type : undefined;
      const message =
        typeof err === 'object' && err !== null
          ? [err.message, err.details].filter((s) => typeof s === 'string' && s !== '').join(': ')
          : typeof err === 'string'
            ? err
            : res.text.slice(0, 200);
      const nodeErrors =
        isObject(json?.node_errors) && Object.keys(json.node_errors).length > 0 ? json.node_errors : undefined;
      return {
        ok: false,
        status: res.status,
        error: message || `POST /prompt answered ${res.status}`,
        ...(type ? { type } : {}),
        ...(nodeErrors ? { nodeErrors } : {}),
      };
    }
    if (json.prompt_id !== promptId) {
      // an older server that picks its own id
      this.progress.forget(promptId);
      this.progress.track(json.prompt_id);
    }
    const nodeErrors =
      isObject(json.node_errors) && Object.keys(json.node_errors).length > 0 ? json.node_errors : undefined;
    return { ok: true, promptId: json.prompt_id, number: Number(json.number), ...(nodeErrors ? { nodeErrors } : {}) };
  }

  /** `GET /history/{id}`: the entry once the prompt finished, else undefined (also when unreachable). */
  async history(promptId: string): Promise<ComfyHistoryEntry | undefined> {
    const h = await this.historyResult(promptId);
    return h.ok ? h.entry : undefined;
  }

  /** `GET /view`, read whole into a Buffer (at most `maxViewBytes`). */
  async view(file: { filename: string; subfolder?: string; type?: string }, o: CallOptions = {}): Promise<ViewResult> {
    const q = new URLSearchParams({
      filename: file.filename,
      subfolder: file.subfolder ?? '',
      type: file.type ?? 'output',
    });
    const limit = this.opts.maxViewBytes ?? DEFAULT_MAX_VIEW;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.base}/view?${q}`, this.requestOptions('GET', undefined, undefined, o.signal));
    } catch (err) {
      return { ok: false, error: describeError(err).detail };
    }
    return readViewBody(res, limit, file.filename);
  }

  /** Targeted `POST /interrupt {prompt_id}`: stops the prompt only if it is the one running. */
  interrupt(promptId: string, o: CallOptions = {}): Promise<PlainResult> {
    return this.plain('/interrupt', { prompt_id: promptId }, o.signal);
  }

  /** `POST /queue {delete: [id]}`: removes the prompt if it is still pending. */
  dequeue(promptId: string, o: CallOptions = {}): Promise<PlainResult> {
    return this.plain('/queue', { delete: [promptId] }, o.signal);
  }

  /** `GET /queue`: prompt ids running, and pending in run order. */
  async queue(o: CallOptions = {}): Promise<QueueResult> {
    const res = await this.call('GET', '/queue', undefined, undefined, o.signal);
    if (!res.ok) return { ok: false, error: res.error };
    const json = res.status === 200 ? parseObject(res.text) : undefined;
    if (!json) return { ok: false, error: `GET /queue answered ${res.status}: ${res.text.slice(0, 200)}` };
    return queueLists(json);
  }

  /** Every file a history entry's outputs name: any list-valued ui key, any dict with a filename. */
  outputs(entry: ComfyHistoryEntry): ComfyFileRef[] {
    return outputFiles(entry);
  }

  // ---- waiting and taking prompts off ----------------------------------------------------------

  /** Waits for a submitted prompt's history entry (see WaitOptions); forgets the prompt's progress after. */
  waitFor(promptId: string, o: WaitOptions): Promise<WaitResult> {
    return waitForPrompt(
      {
        history: (id, signal) => this.historyResult(id, signal),
        isLost: (id, signal) => this.isLost(id, signal),
        cancel: (id) => this.cancel(id),
        onProgress: (id, listener) => this.onProgress(id, listener),
        forget: (id) => this.progress.forget(id),
      },
      promptId,
      o,
    );
  }

  /**
   * Dequeues and interrupts every abandoned prompt (each bounded by CANCEL_TIMEOUT_MS); those
   * the box answered for are forgotten. One run at a time; resolves when it is over.
   */
  dropAbandoned(): Promise<void> {
    if (this.abandoned.size === 0) return Promise.resolve();
    this.cleaning ??= (async () => {
      try {
        for (const id of [...this.abandoned]) {
          if (await this.takeOff(id)) this.abandoned.delete(id);
        }
      } finally {
        this.cleaning = undefined;
      }
    })();
    return this.cleaning;
  }

  /** Pending: removed from the queue; running: interrupted. A box that does not answer gets it done later. */
  private async cancel(promptId: string): Promise<void> {
    if (await this.takeOff(promptId)) return;
    this.opts.log?.warn({ promptId }, 'comfyui: cancelling a prompt failed; it is taken off once the box answers');
    this.abandoned.add(promptId);
  }

  /** Remembers a prompt the box may have (its submit got no answer) and tries to take it off now. */
  private abandon(promptId: string): void {
    this.abandoned.add(promptId);
    void this.dropAbandoned();
  }

  /**
   * Dequeue first, so that it cannot start in between; both within CANCEL_TIMEOUT_MS. True when the
   * box answered both.
   */
  private async takeOff(promptId: string): Promise<boolean> {
    const signal = AbortSignal.timeout(CANCEL_TIMEOUT_MS);
    const d = await this.dequeue(promptId, { signal });
    const i = await this.interrupt(promptId, { signal });
    return d.ok && i.ok;
  }

  /** Not running, not pending, and (checked again after the queue) no history entry. */
  private async isLost(promptId: string, signal?: AbortSignal): Promise<boolean> {
    const q = await this.queue({ signal });
    if (!q.ok || q.running.includes(promptId) || q.pending.includes(promptId)) return false;
    const h = await this.historyResult(promptId, signal);
    return h.ok && h.entry === undefined;
  }

  private async historyResult(promptId: string, signal?: AbortSignal): Promise<HistoryAnswer> {
    const res = await this.call('GET', `/history/${encodeURIComponent(promptId)}`, undefined, undefined, signal);
    if (!res.ok) return res;
    const json = res.status === 200 ? parseObject(res.text) : undefined;
    if (!json) return { ok: false, error: `GET /history answered ${res.status}: ${res.text.slice(0, 200)}` };
    const entry = json[promptId];
    return { ok: true, entry: isObject(entry) ? (entry as ComfyHistoryEntry) : undefined };
  }

  private async plain(path: string, body: unknown, signal?: AbortSignal): Promise<PlainResult> {
    const res = await this.call('POST', path, JSON.stringify(body), 'application/json', signal);
    if (!res.ok) return res;
    return res.status === 200
      ? { ok: true }
      : { ok: false, error: `POST ${path} answered ${res.status}: ${res.text.slice(0, 200)}` };
  }

  private requestOptions(method: 'GET' | 'POST', body?: string | FormData, contentType?: string, signal?: AbortSignal) {
    return {
      method,
      dispatcher: this.opts.dispatcher,
      headers: {
        ...this.opts.headers,
        ...(contentType ? { 'content-type': contentType, accept: 'application/json' } : { accept: '*/*' }),
      },
      body,
      signal,
      headersTimeout: this.opts.readTimeoutMs,
      bodyTimeout: this.opts.readTimeoutMs,
    };
  }

  private async call(
    method: 'GET' | 'POST',
    path: string,
    body?: string | FormData,
    contentType?: string,
    signal?: AbortSignal,
  ): Promise<HttpResult> {
    let res: HttpResult;
    try {
      const answer = await request(`${this.base}${path}`, this.requestOptions(method, body, contentType, signal));
      const text = await answer.body.text();
      res = { ok: true, status: answer.statusCode, contentType: String(answer.headers['content-type'] ?? ''), text };
    } catch (err) {
      return { ok: false, error: signal?.aborted ? stopReason(signal) : describeError(err).detail };
    }
    // the box answers: whatever was left on it while it did not is taken off now
    if (this.abandoned.size > 0 && !this.cleaning) void this.dropAbandoned();
    return res;
  }
}

/** Why a call's signal stopped it, for its error text. */
const stopReason = (signal: AbortSignal): string =>
  (signal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError'
    ? 'no complete answer within the time allowed'
    : 'stopped (the job was cancelled)';
