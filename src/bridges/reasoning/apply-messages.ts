import { isObject } from '../../json.ts';
/**
 * The mechanisms that have to touch the conversation itself: the soft-switch token appended to
 * the last user turn (`nothink_token`) and the prefilled, already-closed think block
 * (`prefill`). They return the new `messages` (or `prompt`) value, or undefined when the body
 * gives them nothing to work on; the caller reports that as `unsupported`.
 *
 * Only the message that changes is copied; the others are the client's parsed objects as they
 * are (re-serialised with `messages`, since that member is replaced as a whole).
 */

type Json = Record<string, unknown>;

/** `text` with `token` after it, a space between; unchanged if it already ends with the token. */
export function withToken(text: string, token: string): string {
  if (text.trimEnd().endsWith(token)) return text;
  const separator = text === '' || /\s$/.test(text) ? '' : ' ';
  return `${text}${separator}${token}`;
}

/**
 * `messages` with `token` appended to the text of the last user message: to a string content,
 * or to the last text part of a parts array (a new text part when it has none, e.g. an image
 * only). The last USER message, not the last message: in a tool loop the conversation ends with
 * tool results, and the switch is read from the latest user turn. The same turn gets the same
 * token on every loop iteration, so the prompt prefix a server caches stays stable.
 */
export function messagesWithToken(messages: unknown, token: string): unknown[] | undefined {
  if (!Array.isArray(messages)) return undefined;
  let last = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (isObject(messages[i]) && messages[i].role === 'user') {
      last = i;
      break;
    }
  }
  if (last < 0) return undefined;
  const message = messages[last] as Json;
  const content = message.content;
  let next: unknown;
  if (typeof content === 'string') {
    next = withToken(content, token);
    if (next === content) return messages;
  } else if (Array.isArray(content)) {
    let part = -1;
    for (let i = content.length - 1; i >= 0; i--) {
      if (isObject(content[i]) && content[i].type === 'text' && typeof content[i].text === 'string') {
        part = i;
        break;
      }
    }
    if (part < 0) {
      next = [...content, { type: 'text', text: token }];
    } else {
      const old = content[part] as Json;
      const text = withToken(old.text as string, token);
      if (text === old.text) return messages;
      next = content.map((p, i) => (i === part ? { ...old, text } : p));
    }
  } else if (content === undefined || content === null) {
    next = token;
  } else {
    return undefined;
  }
  return messages.map((m, i) => (i === last ? { ...message, content: next } : m));
}

/**
 * A completions `prompt` with the token at its end: a string, or each string of a batch.
 * Token-id prompts (arrays of numbers) cannot take text.
 */
export function promptWithToken(prompt: unknown, token: string): string | string[] | undefined {
  if (typeof prompt === 'string') return withToken(prompt, token);
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((p) => typeof p === 'string')) {
    return (prompt as string[]).map((p) => withToken(p, token));
  }
  return undefined;
}

/**
 * `messages` with an assistant turn holding `text` appended, for the server to continue (an
 * empty think block, so the model answers straight away). Not when the client already ends
 * with an assistant turn of its own: that is the client's prefill, and two would not continue.
 */
export function messagesWithPrefill(messages: unknown, text: string): unknown[] | undefined {
  if (!Array.isArray(messages) || messages.length === 0) return undefined;
  const last = messages[messages.length - 1];
  if (isObject(last) && last.role === 'assistant') return undefined;
  return [...messages, { role: 'assistant', content: text }];
}
