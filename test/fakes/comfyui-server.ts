/**
 * The fake ComfyUI (0.27-like): a real node:http + websocket server on 127.0.0.1 that answers the
 * way ComfyUI's server.py / execution.py / main.py do (see test/fixtures/comfyui/api-notes.md),
 * records every request and obeys its knobs. All state of one fake lives in its ComfyFakeState
 * (comfyui-state.ts); its routes are comfyui-routes.ts, its executor comfyui-execute.ts, its
 * websockets comfyui-ws.ts.
 *
 * One prompt runs at a time, lowest `number` first (FIFO; `front` jumps ahead). Each node of a
 * prompt runs in dependency order; sampler nodes take `steps` × `stepMs` and report progress;
 * output nodes write deterministic files (PNG, mp4, webm, flac, glb …) that /view serves.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { ComfyFake, ComfyKnobs, StartComfyFakeOptions } from './comfyui-types.ts';
import { pump } from './comfyui-execute.ts';
import { text } from './comfyui-http.ts';
import { handle, type ComfyRoutesCore } from './comfyui-routes.ts';
import { newComfyState } from './comfyui-state.ts';
import { ComfySockets } from './comfyui-ws.ts';

/** Starts the fake ComfyUI on 127.0.0.1. */
export async function startComfyFake(opts: StartComfyFakeOptions = {}): Promise<ComfyFake> {
  const s = newComfyState(opts);
  const sockets = new ComfySockets(s);
  const core: ComfyRoutesCore = { s, ws: sockets, restart: () => restart() };

  /** Drops every socket, the queue, the running prompt (no history entry) and the history. */
  function dropAll(): void {
    if (s.running) {
      s.running.reason = 'dropped';
      s.running.record.status = 'dropped';
      s.running.abort.abort();
      s.running = undefined;
    }
    for (const p of s.pending) p.status = 'dropped';
    s.pending = [];
    s.history.clear();
    s.cache.clear();
    sockets.terminateAll();
    for (const socket of httpSockets) socket.destroy();
  }

  const httpSockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(core, req, res).catch((err: unknown) => {
      if (!res.headersSent) text(res, 500, `fake comfyui crashed: ${String(err)}`);
      else res.destroy();
    });
  });
  server.on('connection', (socket: Socket) => {
    if (s.knobs.refuse) {
      socket.resetAndDestroy();
      return;
    }
    httpSockets.add(socket);
    socket.once('close', () => httpSockets.delete(socket));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    s.requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...req.headers },
      body: undefined,
      rawBody: Buffer.alloc(0),
      ws: true,
    });
    if (s.knobs.refuse) {
      socket.resetAndDestroy();
      return;
    }
    if (s.knobs.restarting || s.down === '503') {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    if (url.pathname !== '/ws' && url.pathname !== '/api/ws') {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    sockets.wss.handleUpgrade(req, socket, head, (ws) => sockets.wss.emit('connection', ws, req));
  });

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(opts.port ?? 0);
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake comfyui: no TCP address');
  const port = address.port;
  let closed = false;

  async function restart(o: { downMs?: number; mode?: 'refused' | '503' } = {}): Promise<void> {
    const mode = o.mode ?? 'refused';
    s.down = mode;
    dropAll();
    if (mode === 'refused')
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    await new Promise((r) => setTimeout(r, o.downMs ?? 200));
    if (closed) return;
    if (mode === 'refused') await listen(port);
    s.down = 'no';
    setImmediate(() => pump(core));
  }

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    knobs: s.knobs,
    setKnobs(patch: Partial<ComfyKnobs>) {
      const wasRestarting = s.knobs.restarting;
      Object.assign(s.knobs, patch);
      if (s.knobs.restarting && !wasRestarting) dropAll();
      setImmediate(() => pump(core));
    },
    requests: s.requests,
    prompts: s.prompts,
    uploads: s.uploads,
    files: s.files,
    objectInfo: s.objectInfo,
    wsClients: () => sockets.clients(),
    interrupts: () => s.interruptCount,
    restart,
    async close() {
      closed = true;
      dropAll();
      sockets.wss.close();
      await new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
