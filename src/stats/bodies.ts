/** Captured request/response bodies: cap, gzip, and back. Pure apart from zlib. */
import { gunzipSync, gzipSync, constants as zlib } from 'node:zlib';

/** Bytes kept per side (request, response) before compression. */
export const BODY_CAP_BYTES = 256 * 1024;

export interface PackedBody {
  /** gzip of the (possibly truncated) body. */
  gz: Buffer;
  /** Size of the body before the cap. */
  bytes: number;
}

/**
 * Caps a body at `cap` bytes (a truncated body ends with a readable marker and stays within
 * the cap) and gzips it. Undefined in, null out.
 */
export function packBody(body: Buffer | string | undefined, cap = BODY_CAP_BYTES): PackedBody | null {
  if (body === undefined) return null;
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const kept = buf.length <= cap ? buf : truncate(buf, cap);
  return { gz: gzipSync(kept, { level: zlib.Z_BEST_SPEED }), bytes: buf.length };
}

export function unpackBody(gz: Buffer | null): Buffer | null {
  return gz ? gunzipSync(gz) : null;
}

export function truncationMarker(totalBytes: number): string {
  return `\n…[truncated by llm-gateway: body was ${totalBytes} bytes]`;
}

function truncate(buf: Buffer, cap: number): Buffer {
  const marker = Buffer.from(truncationMarker(buf.length), 'utf8');
  const head = buf.subarray(0, Math.max(0, cap - marker.length));
  return Buffer.concat([head, marker]);
}
