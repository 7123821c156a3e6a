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
  return lengthOf(items, (item) => {
    if (typeof item !== 'object' || item === null) return 0;
    const { content, arguments: args, output } = item as { content?: unknown; arguments?: unknown; output?: unknown };
    return textLength(content) + textLength(args) + textLength(output);
  });
}

/** Characters of a string, or the sum of `itemLength` over a list's items; 0 for anything else. */
function lengthOf(value: unknown, itemLength: (item: unknown) => number): number {
  if (typeof value === 'string') return value.length;
  if (!Array.isArray(value)) return 0;
  let chars = 0;
  for (const item of value) chars += itemLength(item);
  return chars;
}

/** Characters of a string, or of the `text` of content parts (other parts skipped). */
function textLength(content: unknown): number {
  return lengthOf(content, (part) => {
    const t = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
    return typeof t === 'string' ? t.length : 0;
  });
}

/** Characters of a string or a list of strings (completions' `prompt`, embeddings' `input`); a token id counts as 4. */
function stringsLength(value: unknown): number {
  return lengthOf(value, (v) => (typeof v === 'string' ? v.length : typeof v === 'number' ? 4 : 0));
}
