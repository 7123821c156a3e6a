/**
 * A conversation's seed: the text that stays the same on every turn of one conversation, for
 * its affinity key (conversation-affinity.ts). That is the system prompt and the first user
 * message: later turns append to the history, they do not change its start. By surface:
 *
 * - chat completions: the first `system` or `developer` message before the first `user` one,
 *   and that `user` message;
 * - Anthropic Messages: `system`, and the first `user` message;
 * - Responses: `instructions`, and the first user item of the conversation (the stored turns
 *   of `previous_response_id` first, then `input`); a string `input` is the user message.
 *
 * Only text counts (string contents and the `text` of content parts); images, audio and tool
 * parts are skipped. Each part of the seed is cut at SEED_PART_MAX characters, so a pasted
 * book costs no more to hash than its first pages. Pure, never throws: an odd shape yields
 * what it can, or undefined when there is no user text at all (no affinity then).
 */

/** The surfaces that carry a conversation. */
export type SeedSurface = 'chat' | 'messages' | 'responses';

/** Characters of one seed part (system prompt, first user message) that count. */
export const SEED_PART_MAX = 64 * 1024;

type Body = Record<string, unknown>;

/** The seed of `body` on `surface`; `history`: a Responses call's stored earlier items. */
export function conversationSeed(surface: SeedSurface, body: Body, history?: readonly unknown[]): string | undefined {
  switch (surface) {
    case 'chat':
      return seedOf(undefined, body.messages);
    case 'messages':
      return seedOf(textOf(body.system), body.messages);
    case 'responses':
      return responsesSeed(body, history);
  }
}

/** Whether `endpoint` (the call log's name of a proxied call) is a surface with conversations. */
export function seedSurfaceOf(endpoint: string): SeedSurface | undefined {
  if (endpoint === 'ollama-chat') return 'chat'; // Ollama's messages are chat messages
  return endpoint === 'chat' || endpoint === 'messages' || endpoint === 'responses' ? endpoint : undefined;
}

function responsesSeed(body: Body, history: readonly unknown[] | undefined): string | undefined {
  const instructions = textOf(body.instructions);
  if (history?.length) {
    const seed = seedOf(instructions, history);
    if (seed) return seed;
  }
  if (typeof body.input === 'string') return join(instructions, clip(body.input));
  return seedOf(instructions, body.input);
}

/** `system` (when given) or the first system message before the first user one, then that user message. */
function seedOf(system: string | undefined, messages: unknown): string | undefined {
  if (!Array.isArray(messages)) return undefined;
  let instructions = system;
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (role === 'user') return join(instructions, textOf(content));
    if (instructions === undefined && (role === 'system' || role === 'developer')) instructions = textOf(content);
  }
  return undefined;
}

function join(system: string | undefined, user: string | undefined): string | undefined {
  if (!user) return undefined;
  return `${system ?? ''}\0${user}`;
}

/** The text of a content: a string, or the `text` of its parts (other parts skipped), cut at SEED_PART_MAX. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return clip(content);
  if (!Array.isArray(content)) return undefined;
  let text = '';
  for (const part of content) {
    const t = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
    if (typeof t !== 'string') continue;
    text = text ? `${text}\n${t}` : t;
    if (text.length >= SEED_PART_MAX) break;
  }
  return clip(text);
}

function clip(text: string): string {
  return text.length > SEED_PART_MAX ? text.slice(0, SEED_PART_MAX) : text;
}
