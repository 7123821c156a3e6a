/**
 * The progress side of a ComfyUI backend: ONE websocket per gateway client (`/ws?clientId=`),
 * kept open and reopened with backoff after any close or error. Only the prompts this client
 * submitted are tracked (ComfyUI broadcasts `status` — and, for prompts without a client id,
 * `progress` — to every socket); their messages become typed events for per-prompt listeners.
 * Binary preview frames (type 1, and type 4 once `supports_preview_metadata` was announced) are
 * kept as the latest preview per prompt. Nothing here can fail a job: the websocket is a hint,
 * `/history` is the truth (see comfy-client.ts).
 */
import { WebSocket, type RawData } from 'ws';
import type { Logger } from 'pino';

export type ComfyProgressEvent =
  | { kind: 'executing'; node: string }
  | { kind: 'progress'; node: string; value: number; max: number }
  | { kind: 'cached'; nodes: string[] }
  | { kind: 'executed'; node: string; output: Record<string, unknown> }
  | { kind: 'preview'; mime: string; bytes: Buffer }
  | { kind: 'success' }
  | { kind: 'error'; message: string; node?: string }
  | { kind: 'interrupted' };

export type ComfyProgressListener = (event: ComfyProgressEvent) => void;

export type ComfyLog = Pick<Logger, 'debug' | 'warn'>;

export interface ComfyProgressOptions {
  /** ws(s)://host[:port][/prefix]/ws?clientId=… */
  url: string;
  /** Handshake timeout (ms). */
  handshakeTimeoutMs: number;
  log?: ComfyLog;
  /** First reconnect delay (ms), doubled after every failed attempt up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Announce `supports_preview_metadata` (previews then carry their prompt id). Default true. */
  previewMetadata?: boolean;
  /** A ping this often; no pong by the next one → the socket is dropped and reopened. Default 30 s. */
  pingMs?: number;
  /** Sent with the handshake (the backend's credential). */
  headers?: Record<string, string>;
  /** Called each time the socket opens (the box answers again). */
  onOpen?: () => void;
}

/** Events kept for a tracked prompt until its first listener subscribes (cap). */
const BACKLOG_MAX = 256;

const PREVIEW_IMAGE = 1;
const PREVIEW_IMAGE_WITH_METADATA = 4;

interface Tracked {
  listeners: Set<ComfyProgressListener>;
  /** Events that arrived before anyone listened (the prompt can start before /prompt answers). */
  backlog: ComfyProgressEvent[];
  preview?: { mime: string; bytes: Buffer };
}

export class ComfyProgress {
  private ws: WebSocket | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private backoffMs: number;
  private started = false;
  private closed = false;
  private readonly tracked = new Map<string, Tracked>();
  /** Our prompt that ComfyUI last said it is executing (type-1 previews carry no prompt id). */
  private current: string | undefined;
  /** Times the socket opened (tests and metrics). */
  opens = 0;

  constructor(private readonly opts: ComfyProgressOptions) {
    this.backoffMs = opts.minBackoffMs ?? 500;
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Opens the socket (once; later calls do nothing). */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.connect();
  }

  /** Starts recording events of a prompt this client submitted. */
  track(promptId: string): void {
    if (!this.tracked.has(promptId)) this.tracked.set(promptId, { listeners: new Set(), backlog: [] });
  }

  /** Stops tracking a prompt: listeners, backlog and preview are dropped. */
  forget(promptId: string): void {
    this.tracked.delete(promptId);
    if (this.current === promptId) this.current = undefined;
  }

  isTracked(promptId: string): boolean {
    return this.tracked.has(promptId);
  }

  /** Listens to one prompt (tracking it); events that came before the first listener are replayed. */
  on(promptId: string, listener: ComfyProgressListener): () => void {
    this.track(promptId);
    const t = this.tracked.get(promptId)!;
    t.listeners.add(listener);
    const backlog = t.backlog.splice(0);
    for (const e of backlog) this.call(listener, e);
    return () => {
      this.tracked.get(promptId)?.listeners.delete(listener);
    };
  }

  latestPreview(promptId: string): { mime: string; bytes: Buffer } | undefined {
    return this.tracked.get(promptId)?.preview;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.pingTimer);
    this.reconnectTimer = undefined;
    this.pingTimer = undefined;
    const ws = this.ws;
    this.ws = undefined;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
    }
    this.tracked.clear();
  }

  // ---- socket --------------------------------------------------------------------------------------

  private connect(): void {
    if (this.closed) return;
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.opts.url, {
        handshakeTimeout: this.opts.handshakeTimeoutMs,
        perMessageDeflate: false,
        headers: this.opts.headers,
      });
    } catch (err) {
      this.opts.log?.warn({ err: (err as Error).message }, 'comfyui websocket: cannot open');
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    let alive = true;
    ws.on('open', () => {
      this.opens++;
      this.backoffMs = this.opts.minBackoffMs ?? 500;
      if (this.opts.previewMetadata !== false)
        ws.send(JSON.stringify({ type: 'feature_flags', data: { supports_preview_metadata: true } }));
      const pingMs = this.opts.pingMs ?? 30_000;
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => {
        if (!alive) {
          ws.terminate();
          return;
        }
        alive = false;
        try {
          ws.ping();
        } catch {
          /* closing */
        }
      }, pingMs);
      this.pingTimer.unref();
      try {
        this.opts.onOpen?.();
      } catch {
        /* the hook's failure is not the socket's */
      }
    });
    ws.on('pong', () => {
      alive = true;
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      alive = true;
      try {
        const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
        if (isBinary) this.onBinary(buf);
        else this.onText(buf.toString('utf8'));
      } catch (err) {
        this.opts.log?.debug({ err: (err as Error).message }, 'comfyui websocket: frame ignored');
      }
    });
    ws.on('error', (err) => {
      this.opts.log?.debug({ err: err.message }, 'comfyui websocket error');
    });
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      clearInterval(this.pingTimer);
      this.pingTimer = undefined;
      this.scheduleReconnect();
    });
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs ?? 10_000);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect();
    }, delay);
    this.reconnectTimer.unref();
  }

  // ---- frames --------------------------------------------------------------------------------------

  private onText(text: string): void {
    const msg = JSON.parse(text) as { type?: unknown; data?: Record<string, any> };
    const data = msg.data;
    if (typeof msg.type !== 'string' || typeof data !== 'object' || data === null) return;
    const promptId = typeof data.prompt_id === 'string' ? data.prompt_id : undefined;
    if (promptId === undefined || !this.tracked.has(promptId)) return; // status, other clients' prompts, custom types
    switch (msg.type) {
      case 'execution_start':
        this.current = promptId;
        return;
      case 'execution_cached':
        this.current = promptId;
        return this.emit(promptId, { kind: 'cached', nodes: Array.isArray(data.nodes) ? data.nodes.map(String) : [] });
      case 'executing':
        if (data.node === null || data.node === undefined) {
          if (this.current === promptId) this.current = undefined;
          return;
        }
        this.current = promptId;
        return this.emit(promptId, { kind: 'executing', node: String(data.node) });
      case 'progress':
        return this.emit(promptId, {
          kind: 'progress',
          node: String(data.node),
          value: Number(data.value),
          max: Number(data.max),
        });
      case 'executed':
        return this.emit(promptId, {
          kind: 'executed',
          node: String(data.node),
          output: (data.output ?? {}) as Record<string, unknown>,
        });
      case 'execution_success':
        return this.emit(promptId, { kind: 'success' });
      case 'execution_error':
        return this.emit(promptId, {
          kind: 'error',
          message: String(data.exception_message ?? data.exception_type ?? 'execution error'),
          ...(data.node_id !== undefined && data.node_id !== null ? { node: String(data.node_id) } : {}),
        });
      case 'execution_interrupted':
        return this.emit(promptId, { kind: 'interrupted' });
      default:
        return; // progress_state, feature_flags, custom nodes' own types
    }
  }

  private onBinary(buf: Buffer): void {
    if (buf.length < 8) return;
    const type = buf.readUInt32BE(0);
    if (type === PREVIEW_IMAGE) {
      if (this.current === undefined) return;
      const format = buf.readUInt32BE(4);
      this.preview(this.current, format === 1 ? 'image/jpeg' : 'image/png', buf.subarray(8));
    } else if (type === PREVIEW_IMAGE_WITH_METADATA) {
      const len = buf.readUInt32BE(4);
      if (8 + len > buf.length) return;
      const meta = JSON.parse(buf.subarray(8, 8 + len).toString('utf8')) as {
        prompt_id?: unknown;
        image_type?: unknown;
      };
      const promptId = typeof meta.prompt_id === 'string' ? meta.prompt_id : this.current;
      if (promptId === undefined) return;
      this.preview(
        promptId,
        typeof meta.image_type === 'string' ? meta.image_type : 'image/png',
        buf.subarray(8 + len),
      );
    }
    // type 3 (progress text) and unknown types: ignored
  }

  private preview(promptId: string, mime: string, bytes: Buffer): void {
    const t = this.tracked.get(promptId);
    if (!t) return;
    const copy = Buffer.from(bytes);
    t.preview = { mime, bytes: copy };
    this.emit(promptId, { kind: 'preview', mime, bytes: copy });
  }

  private emit(promptId: string, event: ComfyProgressEvent): void {
    const t = this.tracked.get(promptId);
    if (!t) return;
    if (t.listeners.size === 0) {
      if (event.kind === 'preview') return; // kept as the latest preview already
      t.backlog.push(event);
      if (t.backlog.length > BACKLOG_MAX) t.backlog.shift();
      return;
    }
    for (const l of [...t.listeners]) this.call(l, event);
  }

  private call(listener: ComfyProgressListener, event: ComfyProgressEvent): void {
    try {
      listener(event);
    } catch (err) {
      this.opts.log?.warn({ err: (err as Error).message }, 'comfyui progress listener threw');
    }
  }
}
