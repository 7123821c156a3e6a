/**
 * JSON with exact big integers, for media requests: seeds go up to 2^63−1 (ComfyUI's range)
 * and JSON.parse rounds anything past 2^53. `parseExactJson` is JSON.parse except that an
 * integer literal beyond Number.MAX_SAFE_INTEGER becomes a bigint.
 *
 * How: one scan of the text outside strings (strings are jumped over with indexOf) finds
 * the integer literals that are not safe. None (nearly every request): plain JSON.parse. Some:
 * those literals are rewritten into string markers carrying a fresh random nonce, and
 * JSON.parse with a reviver turns the markers back into bigints. Parsing, validation, the
 * `__proto__` rule (an own property) and error positions are JSON.parse's own.
 *
 * A library parser was measured first: lossless-json 4.3 (`parse(text, null, parseNumber)`)
 * needs about 5 s and 1.5 GB for a body with one 40 MB base64 image (JSON.parse: 50 ms),
 * since it builds strings a character at a time, and media bodies carry images inline.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { badRequest, invalidJson } from '../errors.ts';
import { MAX_JSON_DEPTH, nestingDepthExceeds, stringEnd } from './raw-json.ts';

const QUOTE = 0x22;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const isNumberChar = (c: number) =>
  (c >= ZERO && c <= NINE) ||
  c === MINUS ||
  c === 0x2b /* + */ ||
  c === 0x2e /* . */ ||
  c === 0x65 /* e */ ||
  c === 0x45; /* E */

/** Start/end pairs of the integer literals (outside strings) that are not safe JS integers. */
function unsafeIntegers(text: string): number[] {
  const spans: number[] = [];
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end < 0) break;
      i = end - 1;
    } else if ((c >= ZERO && c <= NINE) || c === MINUS) {
      let end = i + 1;
      while (end < n && isNumberChar(text.charCodeAt(end))) end++;
      // 16+ digits, no fraction or exponent, no leading zero (else it is not an integer literal, or not JSON)
      if (end - i >= 16 && /^-?[1-9]\d{15,}$/.test(text.slice(i, end))) {
        const value = BigInt(text.slice(i, end));
        if (value > MAX_SAFE || value < -MAX_SAFE) spans.push(i, end);
      }
      i = end - 1;
    }
  }
  return spans;
}

/**
 * JSON.parse, but integer literals beyond ±(2^53−1) come back as bigint (floats and
 * exponent forms stay numbers). Throws JSON.parse's SyntaxError for text that is not JSON.
 */
export function parseExactJson(text: string): unknown {
  const spans = unsafeIntegers(text);
  if (spans.length === 0) return JSON.parse(text);
  const prefix = `\u0000bigint:${randomBytes(12).toString('hex')}:`;
  const marker = JSON.stringify(prefix).slice(0, -1); // the opening quote and the escaped prefix
  const parts: string[] = [];
  let at = 0;
  for (let k = 0; k < spans.length; k += 2) {
    parts.push(text.slice(at, spans[k]), marker, text.slice(spans[k], spans[k + 1]), '"');
    at = spans[k + 1];
  }
  parts.push(text.slice(at));
  try {
    return JSON.parse(parts.join(''), (_key, value: unknown) =>
      typeof value === 'string' && value.startsWith(prefix) ? BigInt(value.slice(prefix.length)) : value,
    );
  } catch (err) {
    // a rewritten text that does not parse: report JSON.parse's own error, positions of the original
    JSON.parse(text);
    throw err;
  }
}

/**
 * Makes the calling plugin context (not the app: call it inside the `register`ed plugin of the
 * media routes) parse application/json with parseExactJson. The body limit stays fastify's
 * (the app's, or a route's own `bodyLimit`); nesting beyond MAX_JSON_DEPTH and invalid JSON
 * are 400s in the same shape as the other JSON routes (routes/json-body.ts).
 */
export function registerExactJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (nestingDepthExceeds(text, MAX_JSON_DEPTH)) {
      done(badRequest(`The JSON body nests deeper than ${MAX_JSON_DEPTH} levels.`, null, 'json_too_deep'), undefined);
      return;
    }
    let parsed: unknown;
    try {
      parsed = parseExactJson(text);
    } catch (err) {
      done(invalidJson((err as Error).message), undefined);
      return;
    }
    done(null, parsed);
  });
}

/** JSON text in which a `bigint` is written as its digits (JSON.stringify throws on one). */
export function writeJson(value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : writeJson(v))).join(',')}]`;
  const parts: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || typeof v === 'function') continue;
    parts.push(`${JSON.stringify(key)}:${writeJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}
