/** Deterministic embeddings and the /v1/embeddings body of each kind. Pure. */
import { createHash } from 'node:crypto';
import type { FakeKind } from './types.ts';
import { DIALECTS } from './dialects.ts';
import { countTokens } from './replies.ts';

export const EMBEDDING_DIMENSIONS = 8;

/** A unit-length vector of `dims` floats in [-1, 1], fixed for a given text. */
export function embeddingVector(text: string, dims = EMBEDDING_DIMENSIONS): number[] {
  const digest = createHash('sha256').update(text).digest();
  const raw = Array.from({ length: dims }, (_, i) => (digest.readUInt16LE((i * 2) % 30) / 65535) * 2 - 1);
  const norm = Math.hypot(...raw) || 1;
  // Round through float32 so the float and base64 forms carry the same numbers.
  return raw.map((v) => Math.fround(v / norm));
}

/** Little-endian float32, base64: OpenAI's `encoding_format: "base64"`. */
export function toBase64Float32(vector: number[]): string {
  const buf = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => buf.writeFloatLE(v, i * 4));
  return buf.toString('base64');
}

/** The texts of an `input` (string, string[], token ids, or arrays of token ids). */
export function embeddingInputs(input: unknown): string[] {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input)) return [''];
  if (input.every((x) => typeof x === 'number')) return [input.join(' ')];
  return input.map((x) => (typeof x === 'string' ? x : Array.isArray(x) ? x.join(' ') : String(x)));
}

/** The /v1/embeddings reply of `kind`; base64 only where the real server honours it. */
export function embeddingsReply(kind: FakeKind, model: string, input: unknown, encodingFormat: unknown): object {
  const texts = embeddingInputs(input);
  const base64 = encodingFormat === 'base64' && DIALECTS[kind].embeddingsBase64;
  const data = texts.map((text, index) => {
    const vector = embeddingVector(text);
    return { object: 'embedding', index, embedding: base64 ? toBase64Float32(vector) : vector };
  });
  const promptTokens = texts.reduce((sum, t) => sum + countTokens(t), 0);
  const usage = { prompt_tokens: promptTokens, total_tokens: promptTokens };
  if (kind === 'vllm') {
    return {
      id: `embd-${createHash('sha256')
        .update(String(Date.now()) + texts.join())
        .digest('hex')
        .slice(0, 32)}`,
      object: 'list',
      created: Math.floor(Date.now() / 1000),
      model,
      data,
      usage: { ...usage, completion_tokens: 0, prompt_tokens_details: null },
    };
  }
  return { object: 'list', data, model, usage };
}
