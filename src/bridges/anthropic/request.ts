/**
 * A `POST /v1/messages` body as a chat-completions body, for backends that speak only the
 * OpenAI dialect (llama.cpp, vLLM, Ollama, OpenRouter).
 *
 * Where the client is wrong, the answer is the 400 the real API would give, naming the field,
 * so that a client sees the same mistakes through the gateway as without it. What has no
 * chat equivalent and changes nothing about the answer the model writes (`context_management`,
 * `betas`, `service_tier`, `container`, `mcp_servers`, `cache_control` without prompt caching)
 * is dropped. What the backend would have to do differently and cannot (server tools, PDF
 * documents, message threads) is a 400 that says so. Reasoning is returned beside the body, never in it: each
 * backend spells it its own way and another module applies it.
 */
import { reasoningIntent } from './reasoning.ts';
import { conversation, systemMessage } from './request-messages.ts';
import { chatTools } from './request-tools.ts';
import { BridgeFailure, invalid, isObject, type BridgeError, type Json, type ReasoningIntent } from './types.ts';

export type { BridgeError, ReasoningIntent } from './types.ts';

export type MessagesToChat =
  { ok: true; chat: Record<string, unknown>; reasoning?: ReasoningIntent } | { ok: false; error: BridgeError };

export interface MessagesToChatOptions {
  /** The backend's own model id. */
  model: string;
  stream: boolean;
  /** The backend takes `cache_control` on content parts (OpenRouter for Anthropic/Gemini models). */
  promptCache: boolean;
}

export function messagesToChat(body: Record<string, unknown>, opts: MessagesToChatOptions): MessagesToChat {
  try {
    return translate(body, opts);
  } catch (err) {
    if (err instanceof BridgeFailure) return { ok: false, error: err.error };
    throw err;
  }
}

function translate(body: Json, opts: MessagesToChatOptions): MessagesToChat {
  const ctx = { promptCache: opts.promptCache };
  refuseThread(body.thread);
  const maxTokens = body.max_tokens;
  if (maxTokens === undefined || maxTokens === null) throw invalid('max_tokens', 'Field required');
  if (!Number.isInteger(maxTokens) || (maxTokens as number) < 1)
    throw invalid('max_tokens', 'must be a positive integer');

  const messages = conversation(body.messages, ctx);
  const system = systemMessage(body.system, ctx);
  const chat: Json = { model: opts.model, messages: system ? [system, ...messages] : messages, max_tokens: maxTokens };

  const stop = stopSequences(body.stop_sequences);
  if (stop) chat.stop = stop;
  copyNumber(body, chat, 'temperature', false);
  copyNumber(body, chat, 'top_p', false);
  copyNumber(body, chat, 'top_k', true);

  const tools = chatTools(body);
  if (tools.tools) chat.tools = tools.tools;
  if (tools.tool_choice !== undefined) chat.tool_choice = tools.tool_choice;
  if (tools.parallel_tool_calls !== undefined) chat.parallel_tool_calls = tools.parallel_tool_calls;

  const user = metadataUser(body.metadata);
  if (user !== undefined) chat.user = user;
  if (opts.stream) {
    chat.stream = true;
    // the gateway logs and bills every streamed call: ask for the usage chunk
    chat.stream_options = { include_usage: true };
  }

  const reasoning = reasoningIntent(body);
  return reasoning ? { ok: true, chat, reasoning } : { ok: true, chat };
}

/**
 * A message thread (`thread: {type: "create"}` or `{type: "continue", previous_message_id}`)
 * asks the server to hold the conversation; a chat backend holds nothing, and a `continue`
 * carries only the new turn (no history, no `system`, no `tools`). Refused with the error the
 * SDKs recover from: their tool runner then sends the full history without `thread`.
 */
function refuseThread(thread: unknown): void {
  if (thread === undefined || thread === null) return;
  const message =
    'thread: message threads are not supported for this model (its backend speaks chat completions ' +
    'and holds no conversation); send the full conversation without `thread`.';
  throw new BridgeFailure(400, message, 'thread', 'thread_unsupported_request');
}

function stopSequences(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalid('stop_sequences', 'must be an array of strings');
  value.forEach((s, i) => {
    if (typeof s !== 'string') throw invalid(`stop_sequences.${i}`, 'must be a string');
  });
  return value.length ? (value as string[]) : undefined;
}

function copyNumber(body: Json, chat: Json, field: string, integer: boolean): void {
  const value = body[field];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(field, 'must be a number');
  if (integer && !Number.isInteger(value)) throw invalid(field, 'must be an integer');
  chat[field] = value;
}

/** `metadata.user_id` is the end user's id: chat completions' `user` means the same. */
function metadataUser(metadata: unknown): string | undefined {
  if (metadata === undefined || metadata === null) return undefined;
  if (!isObject(metadata)) throw invalid('metadata', 'must be an object');
  const id = metadata.user_id;
  if (id === undefined || id === null) return undefined;
  if (typeof id !== 'string') throw invalid('metadata.user_id', 'must be a string');
  return id;
}
