/**
 * A call's prompt size, estimated from its parsed body before it is sent, for the scheduler's
 * prefill term (`Ticket.promptTokens`): prompt tokens ÷ the box's learnt prefill rate. It only
 * has to grow with the prompt and land near the truth, so it is the gateway's usual estimate
 * (about four bytes of text per token, bridges/anthropic/count-tokens.ts), read off the body
 * the route parsed already: no second parse, no serialising of images.
 */
import { estimateInputTokens } from '../bridges/anthropic/count-tokens.ts';

type Body = Record<string, unknown>;

/**
 * Estimated prompt tokens of a call to `endpoint`; undefined where the body says nothing of
 * it (an audio upload). `history`: a Responses call's stored earlier items, sent with it.
 */
export function promptTokenEstimate(endpoint: string, body: Body, history?: readonly unknown[]): number | undefined {
  switch (endpoint) {
    case 'chat':
    case 'messages':
      // chat messages are read the same way: string contents, text parts, a flat cost per image
      return estimateInputTokens(body);
    case 'responses':
      return tokensOf(textLength(body.instructions) + itemsLength(history) + itemsLength(body.input));
    case 'completions':
      return tokensOf(stringsLength(body.prompt));
    case 'embeddings':
      return tokensOf(stringsLength(body.input));
    default:
      return undefined;
  }
}

/** About four characters per token, at least 1 for any text (usage.ts `estimateTokens`, on a length). */
function tokensOf(chars: number): number {
  return chars === 0 ? 0 : Math.max(1, Math.round(chars / 4));
}

/** Characters of Responses items: message contents, tool calls' arguments, tool outputs; a string input as it is. */
function itemsLength(items: unknown): number {
  if (typeof items === 'string') return items.length;
  if (!Array.isArray(items)) return 0;
  let chars = 0;
  for (const item of items) {
    if (typeof item !== 'object' || item === null) continue;
    const { content, arguments: args, output } = item as { content?: unknown; arguments?: unknown; output?: unknown };
    chars += textLength(content) + textLength(args) + textLength(output);
  }
  return chars;
}

/** Characters of a string, or of the `text` of content parts (other parts skipped). */
function textLength(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let chars = 0;
  for (const part of content) {
    const t = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
    if (typeof t === 'string') chars += t.length;
  }
  return chars;
}

/** Characters of a string or a list of strings (completions' `prompt`, embeddings' `input`); a token id counts as 4. */
function stringsLength(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (!Array.isArray(value)) return 0;
  let chars = 0;
  for (const v of value) {
    if (typeof v === 'string') chars += v.length;
    else if (typeof v === 'number') chars += 4;
  }
  return chars;
}
