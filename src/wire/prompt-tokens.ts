/**
 * Estimated prompt tokens of whole request bodies, one function per body shape, all of them a
 * `TokenTally` (token-estimate.ts) over the text the model is shown. Never throws: an odd shape
 * counts what it can.
 */
import { isObject } from '../json.ts';
import {
  CHAT_USAGE_RULE,
  MESSAGE_OVERHEAD,
  PROMPT_RULE,
  TEXT_RULE,
  TOOL_OVERHEAD,
  TokenTally,
} from './token-estimate.ts';

type Body = Record<string, unknown>;

/**
 * A Messages (or chat) request's input tokens, for `POST /v1/messages/count_tokens` on backends
 * that have no counting endpoint, for `message_start` before the backend reports, and for the
 * scheduler: the system prompt, each message's content blocks, and each tool's name,
 * description and JSON schema, plus a few tokens per message and per tool for the chat
 * template's markers. Thinking blocks in the history are not counted: the bridge does not send
 * them.
 */
export function estimateInputTokens(body: Body): number {
  const tally = new TokenTally(PROMPT_RULE);
  if (body.system !== undefined && body.system !== null) tally.flat(MESSAGE_OVERHEAD).content(body.system);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) {
      if (isObject(message)) tally.flat(MESSAGE_OVERHEAD).content(message.content);
    }
  }
  if (Array.isArray(body.tools)) {
    for (const tool of body.tools) {
      if (isObject(tool)) tally.flat(TOOL_OVERHEAD).text(tool.name).text(tool.description).json(tool.input_schema);
    }
  }
  return tally.tokens();
}

/**
 * The prompt tokens of usage the gateway synthesises for a chat/completions body (the backend
 * reported none): each message's string content, or the JSON text of a content list; else a
 * string `prompt`.
 */
export function estimatePromptTokens(body: Body): number {
  const tally = new TokenTally(CHAT_USAGE_RULE);
  const messages = body.messages;
  if (Array.isArray(messages)) {
    for (const m of messages) {
      const c = (m as { content?: unknown })?.content;
      if (typeof c === 'string') tally.text(c);
      else if (c) tally.json(c);
    }
  } else if (typeof body.prompt === 'string') tally.text(body.prompt);
  return tally.tokens();
}

/**
 * A Responses request's prompt tokens, for the scheduler: its instructions, and the text of
 * its (and `history`'s, the stored earlier items sent with it) input items — message contents,
 * tool calls' arguments, tool outputs; a string input as it is.
 */
export function estimateResponsesTokens(body: Body, history?: readonly unknown[]): number {
  const tally = new TokenTally(TEXT_RULE).content(body.instructions, 'text');
  for (const items of [history, body.input]) {
    if (!Array.isArray(items)) {
      tally.text(items);
      continue;
    }
    for (const item of items) {
      if (!isObject(item)) continue;
      for (const field of [item.content, item.arguments, item.output]) tally.content(field, 'text');
    }
  }
  return tally.tokens();
}

/**
 * The prompt tokens of a string or a list of strings (completions' `prompt`, embeddings'
 * `input`), for the scheduler; a token id counts as four characters.
 */
export function estimateStringsTokens(value: unknown): number {
  const tally = new TokenTally(TEXT_RULE);
  if (!Array.isArray(value)) return tally.text(value).tokens();
  for (const v of value) {
    if (typeof v === 'number') tally.tokenIds(1);
    else tally.text(v);
  }
  return tally.tokens();
}
