/**
 * The fake ComfyUI's websockets (`/ws?clientId=…`): one per client id (a reconnect replaces the
 * old one), `send_sync` to one client or all, the status broadcast, and binary previews (with
 * metadata for clients that asked for it in their feature flags).
 */
import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import { WebSocketServer, WebSocket } from 'ws';
import { fakePng } from './comfyui-media.ts';
import { COMFY_FEATURES, queueRemaining, type ComfyFakeState } from './comfyui-state.ts';

export class ComfySockets {
  readonly sockets = new Map<string, WebSocket>();
  private readonly previewMetadata = new WeakSet<WebSocket>();
  readonly wss = new WebSocketServer({ noServer: true });

  constructor(private readonly s: ComfyFakeState) {
    this.wss.on('connection', (ws: WebSocket, req: IncomingMessage) => this.connected(ws, req));
  }

  sendRaw(ws: WebSocket, payload: string | Buffer): void {
    if (ws.readyState === WebSocket.OPEN) ws.send(payload);
  }

  /** send_sync: to the socket of `sid`, or to everyone when `sid` is null. */
  send(sid: string | null, type: string, data: unknown): void {
    const text = JSON.stringify({ type, data });
    if (sid === null) {
      for (const ws of this.sockets.values()) this.sendRaw(ws, text);
      return;
    }
    const ws = this.sockets.get(sid);
    if (ws) this.sendRaw(ws, text);
  }

  broadcastStatus(): void {
    this.send(null, 'status', { status: { exec_info: { queue_remaining: queueRemaining(this.s) } } });
  }

  sendPreview(sid: string | null, promptId: string, nodeId: string, seed: string): void {
    const png = fakePng(`preview:${seed}`);
    const targets = sid === null ? [...this.sockets.values()] : this.sockets.has(sid) ? [this.sockets.get(sid)!] : [];
    for (const ws of targets) {
      if (this.previewMetadata.has(ws)) {
        const meta = Buffer.from(
          JSON.stringify({
            node_id: nodeId,
            prompt_id: promptId,
            display_node_id: nodeId,
            parent_node_id: null,
            real_node_id: nodeId,
            image_type: 'image/png',
          }),
        );
        const head = Buffer.alloc(8);
        head.writeUInt32BE(4, 0);
        head.writeUInt32BE(meta.length, 4);
        this.sendRaw(ws, Buffer.concat([head, meta, png]));
      } else {
        const head = Buffer.alloc(8);
        head.writeUInt32BE(1, 0); // PREVIEW_IMAGE
        head.writeUInt32BE(2, 4); // PNG
        this.sendRaw(ws, Buffer.concat([head, png]));
      }
    }
  }

  /** Client ids with an open websocket. */
  clients(): string[] {
    return [...this.sockets.entries()].filter(([, ws]) => ws.readyState === WebSocket.OPEN).map(([sid]) => sid);
  }

  /** Drops every socket (a restart). */
  terminateAll(): void {
    for (const ws of this.sockets.values()) ws.terminate();
    this.sockets.clear();
  }

  private connected(ws: WebSocket, req: IncomingMessage): void {
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const sid = url.searchParams.get('clientId') || randomUUID().replace(/-/g, '');
    this.sockets.delete(sid); // "Reusing existing session, remove old"
    this.sockets.set(sid, ws);
    let first = true;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary || !first) return;
      first = false;
      try {
        const msg = JSON.parse(data.toString('utf8'));
        if (msg?.type === 'feature_flags') {
          if (msg.data?.supports_preview_metadata === true) this.previewMetadata.add(ws);
          this.sendRaw(ws, JSON.stringify({ type: 'feature_flags', data: COMFY_FEATURES }));
        }
      } catch {
        /* ignored, as ComfyUI logs and goes on */
      }
    });
    ws.on('close', () => {
      if (this.sockets.get(sid) === ws) this.sockets.delete(sid);
    });
    ws.on('error', () => {});
    this.sendRaw(
      ws,
      JSON.stringify({
        type: 'status',
        data: { status: { exec_info: { queue_remaining: queueRemaining(this.s) } }, sid },
      }),
    );
    if (this.s.running && this.s.running.record.clientId === sid && this.s.running.lastNode)
      this.send(sid, 'executing', { node: this.s.running.lastNode });
  }
}
