/**
 * A `POST /v1/responses` body as a chat-completions body, for backends that speak only the
 * OpenAI chat dialect (llama.cpp, vLLM, Ollama, OpenRouter).
 *
 * Where the client is wrong, the answer is a 400 naming the field (`input[2].call_id`,
 * `tools[0].type`), as the real API gives. What the backend would have to do and cannot
 * (OpenAI's built-in tools, the Files API, stored prompts, OpenAI-side conversations) is a 400
 * that says so. What changes nothing about the answer the model writes, or is the gateway's own
 * business, is not forwarded: `metadata`, `store`, `background`, `previous_response_id` (its
 * items arrive as `history`), `include`, `truncation`, `service_tier`, `prompt_cache_key`,
 * `prompt_cache_retention`, `safety_identifier`, `stream_options`, `top_logprobs`,
 * `text.verbosity`, `max_tool_calls`. `reasoning` is not forwarded either: every backend spells
 * it its own way and another module applies it. Any other field the gateway does not know is
 * dropped, so that a client newer than the gateway still gets an answer.
 */
import { conversation } from './request-input.ts';
import { chatTools } from './request-tools.ts';
import { BridgeFailure, invalid, isObject, unsupported, type BridgeError, type Json } from './types.ts';

export type { BridgeError, ResponseItem } from './types.ts';

export type ResponsesToChat = { ok: true; chat: Record<string, unknown> } | { ok: false; error: BridgeError };

export interface ResponsesToChatOptions {
  /** The model id the chat body names (the caller may set the backend's own per attempt). */
  model: string;
  stream: boolean;
  /** The items of the earlier turns (the `previous_response_id` chain's inputs and outputs), oldest first. */
  history?: unknown[];
  /** The stored item of an id, for `item_reference` items not found in the conversation itself. */
  resolveItem?: (id: string) => unknown;
}

export function responsesToChat(body: Record<string, unknown>, opts: ResponsesToChatOptions): ResponsesToChat {
  try {
    return { ok: true, chat: translate(body, opts) };
  } catch (err) {
    if (err instanceof BridgeFailure) return { ok: false, error: err.error };
    throw err;
  }
}

function translate(body: Json, opts: ResponsesToChatOptions): Json {
  if (!isObject(body)) throw invalid('body', 'must be a JSON object', 'invalid_type');
  refuseUnreachable(body);
  const messages = conversation({ history: opts.history, input: body.input, resolveItem: opts.resolveItem });
  const instructions = instructionsMessage(body.instructions);
  const chat: Json = { model: opts.model, messages: instructions ? [instructions, ...messages] : messages };

  const maxTokens = body.max_output_tokens;
  if (maxTokens !== undefined && maxTokens !== null) {
    if (!Number.isInteger(maxTokens) || (maxTokens as number) < 1)
      throw invalid('max_output_tokens', 'must be a positive integer');
    chat.max_tokens = maxTokens;
  }
  copyNumber(body, chat, 'temperature');
  copyNumber(body, chat, 'top_p');
  if (body.user !== undefined && body.user !== null) {
    if (typeof body.user !== 'string') throw invalid('user', 'must be a string', 'invalid_type');
    chat.user = body.user;
  }

  const tools = chatTools(body);
  if (tools.tools) chat.tools = tools.tools;
  if (tools.tool_choice !== undefined) chat.tool_choice = tools.tool_choice;
  if (tools.parallel_tool_calls !== undefined) chat.parallel_tool_calls = tools.parallel_tool_calls;

  const format = responseFormat(body.text);
  if (format) chat.response_format = format;
  if (opts.stream) {
    chat.stream = true;
    // the gateway logs and bills every streamed call, and the final event carries the usage
    chat.stream_options = { include_usage: true };
  }
  return chat;
}

/** Fields whose whole content lives at OpenAI: without it the answer would be to another question. */
function refuseUnreachable(body: Json): void {
  if (body.prompt !== undefined && body.prompt !== null) {
    throw unsupported(
      'prompt',
      'stored prompt templates live at OpenAI and cannot be used through this gateway; send the ' +
        'prompt as `instructions` and `input`',
    );
  }
  if (body.conversation !== undefined && body.conversation !== null) {
    throw unsupported(
      'conversation',
      'OpenAI conversations cannot be used through this gateway; continue a conversation with ' +
        '`previous_response_id` (of a response stored with `store: true`) or send its items ' +
        'in `input`',
    );
  }
}

/** `instructions` as the first system message (before the stored turns too: they are this request's). */
function instructionsMessage(instructions: unknown): Json | undefined {
  if (instructions === undefined || instructions === null || instructions === '') return undefined;
  if (typeof instructions !== 'string') throw invalid('instructions', 'must be a string', 'invalid_type');
  return { role: 'system', content: instructions };
}

function copyNumber(body: Json, chat: Json, field: string): void {
  const value = body[field];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(field, 'must be a number', 'invalid_type');
  chat[field] = value;
}

/**
 * `text.format` as chat's `response_format`: json_schema keeps its name, schema, strict, description;
 * text is the default.
 */
function responseFormat(text: unknown): Json | undefined {
  if (text === undefined || text === null) return undefined;
  if (!isObject(text)) throw invalid('text', 'must be an object', 'invalid_type');
  const format = text.format;
  if (format === undefined || format === null) return undefined;
  if (!isObject(format)) throw invalid('text.format', 'must be an object', 'invalid_type');
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      if (typeof format.name !== 'string' || format.name === '')
        throw invalid('text.format.name', 'Field required', 'missing_required_parameter');
      if (!isObject(format.schema))
        throw invalid(
          'text.format.schema',
          'Field required (an object holding a JSON schema)',
          'missing_required_parameter',
        );
      const schema: Json = { name: format.name, schema: format.schema };
      if (format.strict !== undefined && format.strict !== null) {
        if (typeof format.strict !== 'boolean')
          throw invalid('text.format.strict', 'must be a boolean', 'invalid_type');
        schema.strict = format.strict;
      }
      if (format.description !== undefined && format.description !== null) {
        if (typeof format.description !== 'string')
          throw invalid('text.format.description', 'must be a string', 'invalid_type');
        schema.description = format.description;
      }
      return { type: 'json_schema', json_schema: schema };
    }
    default:
      throw invalid(
        'text.format.type',
        `must be "text", "json_object" or "json_schema" (got ${JSON.stringify(format.type)})`,
      );
  }
}
