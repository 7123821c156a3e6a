/**
 * An Ollama `/api/chat` or `/api/generate` request as a chat-completions request, made once per
 * call (and kept for failover). `/api/generate` becomes a chat of its `system` and its `prompt`
 * (with its images); `raw: true` asks for no template, which a chat backend cannot skip, so the
 * prompt goes as the user's message all the same. `suffix` (fill-in-the-middle) has no chat
 * equivalent: such a request is a problem for chat backends, served only by ollama ones.
 * `keep_alive` says how long the server keeps the model loaded: the fleet's servers decide that
 * themselves, so it is accepted and left out, like `template` and the deprecated `context`.
 */
import type { ReasoningWant } from '../reasoning/switch.ts';
import { chatMessages, withImages } from './request-messages.ts';
import { applyOptions, reasoningWant, responseFormat } from './request-options.ts';
import { invalid, isObject, refusal, type Json, type OllamaKind, type OllamaProblem } from './types.ts';

export type OllamaToChat = { ok: true; chat: Json; want?: ReasoningWant } | { ok: false; error: OllamaProblem };

export function ollamaToChat(kind: OllamaKind, body: Json, opts: { model: string; stream: boolean }): OllamaToChat {
  try {
    const chat: Json = { model: opts.model, messages: kind === 'chat' ? chatMessages(body.messages) : prompt(body) };
    if (opts.stream) {
      chat.stream = true;
      chat.stream_options = { include_usage: true };
    }
    applyOptions(body.options, chat);
    const format = responseFormat(body.format);
    if (format) chat.response_format = format;
    if (kind === 'chat' && body.tools !== undefined && body.tools !== null) {
      if (!Array.isArray(body.tools) || !body.tools.every(isObject)) throw invalid('tools', 'must be a list of tools');
      if (body.tools.length) chat.tools = body.tools;
    }
    return { ok: true, chat, want: reasoningWant(body.think) };
  } catch (err) {
    return refusal(err);
  }
}

/** `/api/generate`'s `system` and `prompt` (with its `images`) as chat messages. */
function prompt(body: Json): Json[] {
  const suffix = body.suffix;
  if (suffix !== undefined && suffix !== null && suffix !== '') {
    if (typeof suffix !== 'string') throw invalid('suffix', 'must be a string');
    throw invalid('suffix', 'fill-in-the-middle needs a model served by a backend of type ollama');
  }
  const messages: Json[] = [];
  const system = body.system;
  if (system !== undefined && system !== null && system !== '') {
    if (typeof system !== 'string') throw invalid('system', 'must be a string');
    messages.push({ role: 'system', content: system });
  }
  const text = body.prompt ?? '';
  if (typeof text !== 'string') throw invalid('prompt', 'must be a string');
  messages.push({ role: 'user', content: withImages(text, body.images, 'images') });
  return messages;
}

/**
 * A request that only asks the server to load (or, with `keep_alive: 0`, unload) the model:
 * `/api/generate` without a prompt, `/api/chat` without messages. Ollama answers it at once with
 * `done_reason` "load" or "unload"; undefined for a request that generates.
 */
export function loadOnly(kind: OllamaKind, body: Json): 'load' | 'unload' | undefined {
  const empty =
    kind === 'chat'
      ? !Array.isArray(body.messages) || body.messages.length === 0
      : (body.prompt === undefined || body.prompt === '') && !(Array.isArray(body.images) && body.images.length);
  if (!empty) return undefined;
  const keep = body.keep_alive;
  return keep === 0 || keep === '0' || keep === '0s' ? 'unload' : 'load';
}
