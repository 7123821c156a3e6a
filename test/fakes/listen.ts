/**
 * The HTTP server every fake runs on: 127.0.0.1, port 0 unless told, a crash in a handler
 * answered (or the socket dropped once the head is out), `refuse` resetting new connections
 * like a dead host, and a close() that leaves no socket behind.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface FakeListener {
  port: number;
  close(): Promise<void>;
}

export async function listenFake(opts: {
  label: string;
  port?: number;
  /** Read on every new connection. */
  refuse: () => boolean;
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** Answers a handler that threw before its head went out. */
  crashed: (res: ServerResponse, err: unknown) => void;
}): Promise<FakeListener> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    opts.handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) opts.crashed(res, err);
      else res.destroy();
    });
  });
  server.on('connection', (socket: Socket) => {
    if (opts.refuse()) {
      socket.resetAndDestroy();
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`${opts.label}: no TCP address`);
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const s of sockets) s.destroy();
      }),
  };
}
