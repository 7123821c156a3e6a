/**
 * Embeddings encoding fix-up.
 *
 * The official OpenAI SDKs ask for `encoding_format: "base64"` by default and decode the
 * text as little-endian float32. Many local servers ignore the field and return float arrays;
 * others honour it. Whatever the backend did, the client gets the encoding it asked for.
 */
import { endianness } from 'node:os';

export type EmbeddingEncoding = 'float' | 'base64';

const hostIsBigEndian = endianness() === 'BE';

/**
 * Returns `body` with every `data[i].embedding` in the `requested` encoding (undefined means
 * float, the API default). Everything else is left as it was; when nothing needs converting
 * the very same object is returned. The input is never mutated.
 */
export function adaptEmbeddingsResponse(body: any, requested: EmbeddingEncoding | undefined): any {
  if (typeof body !== 'object' || body === null || !Array.isArray(body.data)) return body;
  const want = requested ?? 'float';
  let changed = false;
  const data = body.data.map((item: any) => {
    const embedding = item?.embedding;
    let converted: unknown;
    if (want === 'base64' && isNumberArray(embedding)) converted = floatsToBase64(embedding);
    else if (want === 'float' && typeof embedding === 'string') converted = base64ToFloats(embedding);
    if (converted === undefined) return item;
    changed = true;
    return { ...item, embedding: converted };
  });
  return changed ? { ...body, data } : body;
}

/** Little-endian float32 bytes of `values`, as base64 text. */
export function floatsToBase64(values: readonly number[]): string {
  const bytes = Buffer.from(Float32Array.from(values).buffer);
  if (hostIsBigEndian) bytes.swap32();
  return bytes.toString('base64');
}

/** Decodes base64 little-endian float32 bytes; undefined when the length is not whole floats. */
export function base64ToFloats(text: string): number[] | undefined {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length % 4 !== 0) return undefined;
  const floats = new Float32Array(bytes.length / 4);
  const view = Buffer.from(floats.buffer);
  bytes.copy(view);
  if (hostIsBigEndian) view.swap32();
  return Array.from(floats);
}

function isNumberArray(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'number');
}
