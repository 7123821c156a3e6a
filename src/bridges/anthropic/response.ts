/**
 * A chat-completions answer as one Anthropic Message.
 *
 * Blocks come in the order Anthropic writes them: the reasoning (as a `thinking` block), then
 * the text, then the tool calls. A backend's reasoning has no Anthropic signature; the block
 * carries an empty one, and the request side drops thinking blocks from the history, so it is
 * never checked. Tool arguments a backend produced that are not a JSON object cannot become a
 * `tool_use` input: that is the backend's failure (502), never a guess at what was meant.
 */
import { usageFromLlamaCppTimings } from '../../wire/llama-timings.ts';
import { usageFromOpenAI, type Usage } from '../../wire/usage.ts';
import { messageId, toolUseId } from './ids.ts';
import { reportedStopSequence, stopInfo } from './stop-reason.ts';
import { isObject, type BridgeError, type Json } from './types.ts';
import { messageUsage } from './usage.ts';

export interface ChatToMessageOptions {
  /** The model name the client asked for: it is what the client sees in the answer. */
  model: string;
  /** The request's `stop_sequences`, to tell a matched one from a natural end. */
  stopSequences?: string[];
}

export type ChatToMessage = { ok: true; message: Record<string, unknown> } | { ok: false; error: BridgeError };

const NO_USAGE: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

export function chatToMessage(chat: Record<string, unknown>, opts: ChatToMessageOptions): ChatToMessage {
  const choice = Array.isArray(chat.choices) ? chat.choices[0] : undefined;
  if (!isObject(choice) || !isObject(choice.message))
    return badGateway('the backend answered without a message (no choices[0].message)');
  const message = choice.message;
  const content: Json[] = [];

  const reasoning = nonEmptyString(message.reasoning_content) ?? nonEmptyString(message.reasoning);
  if (reasoning !== undefined) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  const refusal = nonEmptyString(message.refusal);
  const text = textOf(message.content) ?? refusal;
  if (text !== undefined) content.push({ type: 'text', text });

  const calls = toolCallsOf(message);
  for (const call of calls) {
    const input = parseArguments(call.arguments);
    if (input === undefined)
      return badGateway(`the backend's call of tool "${call.name}" has arguments that are not a JSON object`);
    content.push({ type: 'tool_use', id: toolUseId(call.id), name: call.name, input });
  }

  const matched = reportedStopSequence(choice, chat, opts.stopSequences);
  const stop =
    refusal !== undefined && textOf(message.content) === undefined
      ? { stop_reason: 'refusal', stop_sequence: null }
      : stopInfo(choice.finish_reason, matched, calls.length > 0);
  const usage = usageFromOpenAI(chat) ?? usageFromLlamaCppTimings(chat.timings) ?? NO_USAGE;
  return {
    ok: true,
    message: {
      id: messageId(chat.id),
      type: 'message',
      role: 'assistant',
      model: opts.model,
      content,
      stop_reason: stop.stop_reason,
      stop_sequence: stop.stop_sequence,
      usage: messageUsage(usage),
    },
  };
}

function badGateway(message: string): ChatToMessage {
  return { ok: false, error: { status: 502, message } };
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** `content` as a string, or the text of content parts (some backends answer with parts). */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return nonEmptyString(content);
  if (!Array.isArray(content)) return undefined;
  const text = content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join('');
  return nonEmptyString(text);
}

interface Call {
  id: unknown;
  name: string;
  arguments: unknown;
}

/** `tool_calls`, or the single legacy `function_call` of older servers. */
function toolCallsOf(message: Json): Call[] {
  const calls: Call[] = [];
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isObject(call) || !isObject(call.function)) continue;
      calls.push({
        id: call.id,
        name: typeof call.function.name === 'string' ? call.function.name : '',
        arguments: call.function.arguments,
      });
    }
  } else if (isObject(message.function_call)) {
    const fn = message.function_call;
    calls.push({ id: undefined, name: typeof fn.name === 'string' ? fn.name : '', arguments: fn.arguments });
  }
  return calls;
}

/** The arguments as an input object: '' (or none) is {}, an object passes, other JSON or garbage is undefined. */
function parseArguments(args: unknown): Json | undefined {
  if (args === undefined || args === null) return {};
  if (isObject(args)) return args;
  if (typeof args !== 'string') return undefined;
  if (args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}
