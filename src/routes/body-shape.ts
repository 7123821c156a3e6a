/**
 * A cheap look at the fields of a JSON call body whose type the gateway itself depends on,
 * so a client's type error is the client's 400 (naming the field, OpenAI's wording) and not
 * a backend's 500 relayed or a 502 counted against the backend:
 *
 * - `stream`, and the Responses API's `background` and `store`: booleans (or null) — a
 *   `background: "yes"` would otherwise run in the foreground without a word;
 * - `stream_options`: an object (or null);
 * - `messages`, when present: a list whose items are objects with a string `role`.
 *
 * Read only: the body is never re-serialised (it goes to the backend byte for byte).
 */
import { badRequest, type GatewayError } from '../errors.ts';

const BOOLEAN_FLAGS = ['stream', 'background', 'store'] as const;

export function bodyShapeProblem(body: unknown): GatewayError | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const b = body as Record<string, unknown>;
  for (const flag of BOOLEAN_FLAGS) {
    if (b[flag] != null && typeof b[flag] !== 'boolean') return invalidType(flag, 'a boolean', b[flag]);
  }
  if (b.stream_options != null && !isObject(b.stream_options)) {
    return invalidType('stream_options', 'an object', b.stream_options);
  }
  const messages = b.messages;
  if (messages === undefined) return undefined;
  if (!Array.isArray(messages)) return invalidType('messages', 'an array', messages);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (!isObject(m)) return invalidType(`messages[${i}]`, 'an object', m);
    const role = (m as Record<string, unknown>).role;
    const param = `messages[${i}].role`;
    if (role === undefined) {
      return badRequest(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
    }
    if (typeof role !== 'string') return invalidType(param, 'a string', role);
  }
  return undefined;
}

function invalidType(param: string, expected: string, got: unknown): GatewayError {
  const message = `Invalid type for '${param}': expected ${expected}, but got ${typeName(got)} instead.`;
  return badRequest(message, param, 'invalid_type');
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  return `a ${typeof value}`;
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
