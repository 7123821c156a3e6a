/** Answers the fake ComfyUI writes the way aiohttp does, and a request body read whole. */
import type { IncomingMessage, ServerResponse } from 'node:http';

export function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
  });
  res.end(payload);
}
export function text(res: ServerResponse, status: number, body: string): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}
/** aiohttp's `web.Response(status=200)`: an empty body. */
export const empty = (res: ServerResponse) => {
  if (!res.destroyed) {
    res.writeHead(200, { 'Content-Length': 0 });
    res.end();
  }
};
export const notFound = (res: ServerResponse) => text(res, 404, '404: Not Found');

export async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}
