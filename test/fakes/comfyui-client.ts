/** Small helpers for tests that talk to the fake ComfyUI directly: a websocket recorder, submit, upload. */
import { WebSocket } from 'ws';
import type { ComfyFake } from './comfyui-types.ts';

export interface ComfyWsMessage {
  type: string;
  data: any;
}

export interface ComfyWsRecorder {
  ws: WebSocket;
  clientId: string;
  /** JSON frames in arrival order. */
  messages: ComfyWsMessage[];
  /** Binary frames (previews) in arrival order. */
  binary: Buffer[];
  closed: boolean;
  /** Resolves with the first message (already received or later) that matches; rejects after timeoutMs. */
  next(pred: (m: ComfyWsMessage) => boolean, timeoutMs?: number): Promise<ComfyWsMessage>;
  /** The messages of one prompt, `status` excluded. */
  ofPrompt(promptId: string): ComfyWsMessage[];
  close(): Promise<void>;
}

/** Opens `${fake.url}/ws?clientId=…` and records everything; resolves once the socket is open. */
export async function openComfyWs(
  fake: { url: string },
  clientId: string,
  opts: { featureFlags?: Record<string, unknown>; path?: string } = {},
): Promise<ComfyWsRecorder> {
  const ws = new WebSocket(
    `${fake.url.replace(/^http/, 'ws')}${opts.path ?? '/ws'}?clientId=${encodeURIComponent(clientId)}`,
  );
  const messages: ComfyWsMessage[] = [];
  const binary: Buffer[] = [];
  const waiters: Array<() => void> = [];
  const rec: ComfyWsRecorder = {
    ws,
    clientId,
    messages,
    binary,
    closed: false,
    next(pred, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = messages.find(pred);
          if (hit) {
            clearTimeout(timer);
            resolve(hit);
            return true;
          }
          return false;
        };
        const timer = setTimeout(() => {
          const i = waiters.indexOf(waiter);
          if (i >= 0) waiters.splice(i, 1);
          reject(
            new Error(
              `ws ${clientId}: no matching message within ${timeoutMs} ms; got ${messages.map((m) => m.type).join(',')}`,
            ),
          );
        }, timeoutMs);
        const waiter = () => {
          if (check()) waiters.splice(waiters.indexOf(waiter), 1);
        };
        if (!check()) waiters.push(waiter);
      });
    },
    ofPrompt(promptId) {
      return messages.filter((m) => m.type !== 'status' && m.data?.prompt_id === promptId);
    },
    close() {
      if (rec.closed) return Promise.resolve();
      return new Promise((resolve) => {
        ws.once('close', () => resolve());
        ws.close();
      });
    },
  };
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) binary.push(Buffer.from(data));
    else messages.push(JSON.parse(data.toString('utf8')));
    for (const w of [...waiters]) w();
  });
  ws.on('close', () => {
    rec.closed = true;
  });
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  if (opts.featureFlags) ws.send(JSON.stringify({ type: 'feature_flags', data: opts.featureFlags }));
  return rec;
}

export async function postJson(fake: { url: string }, path: string, body: unknown): Promise<Response> {
  return fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** POST /prompt; returns the status and the parsed body. */
export async function submitPrompt(
  fake: { url: string },
  prompt: unknown,
  extra: Record<string, unknown> = {},
): Promise<{ status: number; body: any }> {
  const res = await postJson(fake, '/prompt', { prompt, ...extra });
  return { status: res.status, body: await res.json() };
}

/** POST /upload/image as multipart (the way ComfyUI's frontend does). */
export async function uploadImage(
  fake: { url: string },
  name: string,
  data: Buffer,
  fields: { overwrite?: string; subfolder?: string; type?: string } = {},
): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('image', new Blob([new Uint8Array(data)], { type: 'image/png' }), name);
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) form.append(k, v);
  const res = await fetch(`${fake.url}/upload/image`, { method: 'POST', body: form });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body };
}

/** Waits until GET /history/{id} has the entry; returns it. */
export async function historyEntry(
  fake: ComfyFake | { url: string },
  promptId: string,
  timeoutMs = 5000,
): Promise<any> {
  const start = Date.now();
  for (;;) {
    const body: any = await (await fetch(`${fake.url}/history/${promptId}`)).json();
    if (body[promptId]) return body[promptId];
    if (Date.now() - start > timeoutMs) throw new Error(`no history entry for ${promptId} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
