/**
 * Anthropic-shaped ids for what a chat backend named its own way.
 *
 * The ids are derived from the backend's, not drawn at random, so that the same chat answer
 * (or a retried stream of it) maps to the same message and tool_use ids, and a gateway log
 * line with a `chatcmpl-…` or `call_…` id can be matched to what the client saw. Anthropic
 * clients send tool_use ids back in `tool_use`/`tool_result` blocks and the API checks them
 * against `^[a-zA-Z0-9_-]+$`; backends use other characters too (`functions.get_weather:0`),
 * so those are replaced, and a short hash of the original keeps two such ids apart.
 */
import { createHash, randomBytes } from 'node:crypto';

const UNSAFE = /[^A-Za-z0-9_-]/g;
const SAFE = /^[A-Za-z0-9_-]+$/;

function safeSuffix(id: string): string {
  const cleaned = id.replace(UNSAFE, '_');
  if (cleaned === id) return id;
  return `${cleaned}_${createHash('sha256').update(id).digest('hex').slice(0, 8)}`;
}

/** 24 characters of randomness in the id alphabet, for a backend that gave no id. */
function randomSuffix(): string {
  return randomBytes(18).toString('base64url');
}

function derived(prefix: string, id: unknown): string {
  if (typeof id !== 'string' || id === '') return prefix + randomSuffix();
  // already ours (or a real Anthropic id passed through): keep it, so the mapping is idempotent
  if (id.startsWith(prefix) && SAFE.test(id)) return id;
  return prefix + safeSuffix(id);
}

/** `msg_…` from a chat completion's `id`; random when there is none. */
export function messageId(chatId: unknown): string {
  return derived('msg_', chatId);
}

/** `toolu_…` from a tool call's `id`; the same call id always gives the same tool_use id. */
export function toolUseId(callId: unknown): string {
  return derived('toolu_', callId);
}
