/**
 * A chat-completions answer as one Response object.
 *
 * Output items come in the order the API writes them: the reasoning (a `reasoning` item whose
 * summary is the backend's reasoning text — a chat backend's raw reasoning is the closest thing
 * it has), then the text as one `message` item, then one `function_call` item per tool call.
 * Tool arguments pass as the string the backend wrote: the Responses API carries them as a
 * string too, so unlike the Anthropic bridge nothing has to be parsed or can fail here.
 * A `length` finish is an `incomplete` Response (`max_output_tokens`), its last item too.
 */
import { usageFromLlamaCppTimings } from '../../wire/llama-timings.ts';
import { usageFromOpenAI, type Usage } from '../../wire/usage.ts';
import { newCallId, newFunctionCallId, newMessageId, newReasoningId } from './ids.ts';
import {
  finishStatus,
  functionCallItem,
  messageItem,
  outputTextPart,
  reasoningItem,
  reasoningTokensOf,
  refusalPart,
  responseObject,
  responsesUsage,
  summaryTextPart,
  type ResponseOpts,
} from './response-object.ts';
import { isObject, type BridgeError, type Json } from './types.ts';

export type { ResponseOpts } from './response-object.ts';
export { outputText } from './response-object.ts';

export type ChatToResponse = { ok: true; response: Record<string, unknown> } | { ok: false; error: BridgeError };

const NO_USAGE: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

export function chatToResponse(chat: Record<string, unknown>, opts: ResponseOpts): ChatToResponse {
  const choice = Array.isArray(chat.choices) ? chat.choices[0] : undefined;
  if (!isObject(choice) || !isObject(choice.message)) {
    return {
      ok: false,
      error: {
        status: 502,
        message: 'the backend answered without a message (no choices[0].message)',
        code: 'untranslatable_answer',
      },
    };
  }
  const message = choice.message;
  const finish = finishStatus(choice.finish_reason);
  const output: Json[] = [];

  const reasoning = nonEmpty(message.reasoning_content) ?? nonEmpty(message.reasoning);
  if (reasoning !== undefined) output.push(reasoningItem(newReasoningId(), [summaryTextPart(reasoning)]));
  const content: Json[] = [];
  const text = textOf(message.content);
  if (text !== undefined) content.push(outputTextPart(text));
  const refusal = nonEmpty(message.refusal);
  if (refusal !== undefined) content.push(refusalPart(refusal));
  if (content.length) output.push(messageItem(newMessageId(), 'completed', content));
  for (const call of toolCallsOf(message)) {
    output.push(functionCallItem(newFunctionCallId(), 'completed', call.id ?? newCallId(), call.name, call.arguments));
  }
  // what was cut short is the last thing the model was writing
  const last = output[output.length - 1];
  if (finish.status === 'incomplete' && last && last.status !== undefined) last.status = 'incomplete';

  const usage = usageFromOpenAI(chat) ?? usageFromLlamaCppTimings(chat.timings) ?? NO_USAGE;
  const response = responseObject(opts, {
    status: finish.status,
    incompleteDetails: finish.incompleteDetails,
    output,
    usage: responsesUsage(usage, reasoningTokensOf(chat)),
  });
  return { ok: true, response };
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** `content` as a string, or the text of content parts (some backends answer with parts). */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return nonEmpty(content);
  if (!Array.isArray(content)) return undefined;
  return nonEmpty(content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join(''));
}

interface Call {
  id?: string;
  name: string;
  arguments: string;
}

/** `tool_calls`, or the single legacy `function_call` of older servers; arguments always a string. */
function toolCallsOf(message: Json): Call[] {
  const raw: Json[] = [];
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls)
      if (isObject(call) && isObject(call.function)) raw.push({ ...call.function, id: call.id });
  } else if (isObject(message.function_call)) {
    raw.push(message.function_call);
  }
  return raw.map((fn) => ({
    id: typeof fn.id === 'string' && fn.id !== '' ? fn.id : undefined,
    name: typeof fn.name === 'string' ? fn.name : '',
    arguments: argumentsText(fn.arguments),
  }));
}

/**
 * The arguments as the JSON string the API carries: some servers send an object, and some an
 * empty string for a call without parameters, which no client can parse: that is `{}`.
 */
export function argumentsText(args: unknown): string {
  const text = typeof args === 'string' ? args : isObject(args) ? JSON.stringify(args) : '';
  return text.trim() === '' ? '{}' : text;
}
