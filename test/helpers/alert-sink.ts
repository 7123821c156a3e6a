/**
 * A local HTTP sink for alerts: a real server on 127.0.0.1 port 0 that records every POST
 * (path, headers, body) and answers with the statuses it is told, in turn (200 once they run
 * out); `hold` keeps answers back until `release`, like a webhook that hangs.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { waitFor } from './wait.ts';

export interface SinkRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface AlertSink {
  url: string;
  received: SinkRequest[];
  /** Statuses for the next answers, in order; then 200. */
  statuses: number[];
  /** While true, answers wait for `release()`. */
  hold: boolean;
  release(): void;
  /** Waits until `n` requests (on `path`, if given) arrived; they are returned. */
  waitFor(n: number, path?: string, timeoutMs?: number): Promise<SinkRequest[]>;
  close(): Promise<void>;
}

export async function startAlertSink(): Promise<AlertSink> {
  const sockets = new Set<Socket>();
  const held: { res: ServerResponse; status: number }[] = [];
  const sink: AlertSink = {
    url: '',
    received: [],
    statuses: [],
    hold: false,
    release() {
      sink.hold = false;
      for (const h of held.splice(0)) h.res.writeHead(h.status).end();
    },
    async waitFor(n, path, timeoutMs = 5000) {
      const matching = () => sink.received.filter((r) => path === undefined || r.path === path);
      await waitFor(() => matching().length >= n, `${n} alert(s)${path ? ` on ${path}` : ''}`, timeoutMs);
      return matching();
    },
    async close() {
      for (const h of held.splice(0)) h.res.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      sink.received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      const status = sink.statuses.shift() ?? 200;
      if (sink.hold) held.push({ res, status });
      else res.writeHead(status).end();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  sink.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return sink;
}

/** The JSON body of a sink request. */
export function bodyOf(r: SinkRequest): Record<string, unknown> {
  return JSON.parse(r.body) as Record<string, unknown>;
}
