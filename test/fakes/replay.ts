/**
 * A backend that answers every chat call with one recorded SSE body, byte for byte — to run
 * real captured transcripts through the gateway's relay.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReplayBackend {
  url: string;
  /** Bodies of the chat requests received. */
  requests: any[];
  close(): Promise<void>;
}

export async function startReplay(
  model: string,
  sseBody: Buffer,
  opts: { chunkBytes?: number } = {},
): Promise<ReplayBackend> {
  const requests: any[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (req.method === 'GET' && req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            data: [{ id: model, object: 'model', created: 1727308800, owned_by: 'system' }],
          }),
        );
        return;
      }
      if (req.method !== 'POST') {
        // like OpenAI's API: any other route (the gateway's residency probes) is a 404
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { message: `Invalid URL (${req.method} ${req.url})`, type: 'invalid_request_error' },
          }),
        );
        return;
      }
      requests.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      const step = opts.chunkBytes ?? sseBody.length;
      for (let i = 0; i < sseBody.length; i += step) {
        res.write(sseBody.subarray(i, i + step));
        if (step < sseBody.length) await new Promise((r) => setImmediate(r));
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
