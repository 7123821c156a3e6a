import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adaptEmbeddingsResponse } from '../src/backends/embeddings-encoding.ts';

const floats = [0.1, -2.5, 3.4028234663852886e38, 0, -0.0001234];

function body(embedding: unknown, more: object[] = []): any {
  return {
    object: 'list',
    data: [{ object: 'embedding', index: 0, embedding }, ...more],
    model: 'nomic-embed',
    usage: { prompt_tokens: 3, total_tokens: 3 },
  };
}

/** How the official SDK reads a base64 embedding: little-endian float32. */
function decodeLikeTheSdk(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  const out: number[] = [];
  for (let at = 0; at < bytes.length; at += 4) out.push(bytes.readFloatLE(at));
  return out;
}

test('float → base64 when the client asked base64: decodes to the same float32 values', () => {
  const input = body(floats, [{ object: 'embedding', index: 1, embedding: [1, 2] }]);
  const snapshot = structuredClone(input);
  const out = adaptEmbeddingsResponse(input, 'base64');
  assert.equal(typeof out.data[0].embedding, 'string');
  assert.deepEqual(
    decodeLikeTheSdk(out.data[0].embedding),
    floats.map((f) => Math.fround(f)),
  );
  assert.deepEqual(decodeLikeTheSdk(out.data[1].embedding), [1, 2]);
  assert.equal(Buffer.from(out.data[0].embedding, 'base64').length, floats.length * 4);
  assert.deepEqual({ ...out, data: undefined }, { ...input, data: undefined }, 'everything else is untouched');
  assert.deepEqual(out.data[0].index, 0);
  assert.deepEqual(input, snapshot, 'the input is not mutated');
});

test('base64 → float when the client asked float (or nothing)', () => {
  const encoded = adaptEmbeddingsResponse(body(floats), 'base64').data[0].embedding;
  for (const requested of ['float', undefined] as const) {
    const out = adaptEmbeddingsResponse(body(encoded), requested);
    assert.deepEqual(
      out.data[0].embedding,
      floats.map((f) => Math.fround(f)),
      String(requested),
    );
  }
});

test('an embedding already in the requested encoding passes through as the same object', () => {
  const asFloat = body(floats);
  assert.equal(adaptEmbeddingsResponse(asFloat, 'float'), asFloat);
  assert.equal(adaptEmbeddingsResponse(asFloat, undefined), asFloat);
  const asBase64 = body('AACAPwAAAEA=');
  assert.equal(adaptEmbeddingsResponse(asBase64, 'base64'), asBase64);
  assert.equal(asBase64.data[0].embedding, 'AACAPwAAAEA=');
});

test('bodies that are not embedding lists, and undecodable text, are left alone', () => {
  const error = { error: { message: 'nope' } };
  assert.equal(adaptEmbeddingsResponse(error, 'base64'), error);
  assert.equal(adaptEmbeddingsResponse(null, 'float'), null);
  const odd = body('AAA='); // 2 bytes: not whole float32s
  assert.equal(adaptEmbeddingsResponse(odd, 'float'), odd);
});
