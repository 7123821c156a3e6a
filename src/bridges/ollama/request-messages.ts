/**
 * Ollama chat messages as chat-completions messages.
 *
 * The two protocols differ in three places. Images are a list of base64 strings beside the
 * text (`images`), where chat wants content parts with a data URL. Tool-call arguments are a
 * JSON object, where chat wants the object's text. And Ollama tool results name the tool
 * (`tool_name`), often with no call id at all, where chat needs the id of the call they answer:
 * calls without an id get one (`call_<message>_<n>`), and each tool result takes the id of the
 * first call of the last assistant turn not answered yet (by `tool_call_id`, else by name, else
 * in order). The assistant's earlier `thinking` is dropped: chat templates drop it too.
 */
import { invalid, isObject, type Json } from './types.ts';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** A call of the last assistant turn, waiting for its result. */
interface OpenCall {
  id: string;
  name: string;
}

export function chatMessages(messages: unknown): Json[] {
  if (messages === undefined || messages === null) return [];
  if (!Array.isArray(messages)) throw invalid('messages', 'must be a list of messages');
  let open: OpenCall[] = [];
  return messages.map((message, i) => {
    const path = `messages.${i}`;
    if (!isObject(message)) throw invalid(path, 'must be a message object');
    const role = typeof message.role === 'string' ? message.role.toLowerCase() : '';
    if (!ROLES.has(role)) throw invalid(`${path}.role`, 'must be system, user, assistant or tool');
    const content = messageText(message.content, `${path}.content`);
    if (role === 'tool') return toolResult(message, content, open);
    const out: Json = { role, content: withImages(content, message.images, `${path}.images`) };
    if (role === 'assistant' && message.tool_calls !== undefined && message.tool_calls !== null) {
      const calls = toolCalls(message.tool_calls, i, `${path}.tool_calls`);
      if (calls.length) {
        out.tool_calls = calls;
        open = calls.map((c) => ({ id: c.id as string, name: (c.function as Json).name as string }));
      }
    }
    return out;
  });
}

function messageText(content: unknown, path: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content !== 'string') throw invalid(path, 'must be a string');
  return content;
}

/** A message's text with its images: a plain string when it has none, else content parts. */
export function withImages(text: string, images: unknown, path: string): string | Json[] {
  if (images === undefined || images === null) return text;
  if (!Array.isArray(images)) throw invalid(path, 'must be a list of base64-encoded images');
  if (!images.length) return text;
  const parts: Json[] = text === '' ? [] : [{ type: 'text', text }];
  images.forEach((image, k) => {
    if (typeof image !== 'string' || image === '') throw invalid(`${path}.${k}`, 'must be a base64-encoded image');
    parts.push({ type: 'image_url', image_url: { url: dataUrl(image) } });
  });
  return parts;
}

/** Magic numbers of the image formats vision models take, as their base64 starts. */
const BASE64_SIGNATURES: readonly [string, string][] = [
  ['iVBORw0KGgo', 'image/png'],
  ['/9j/', 'image/jpeg'],
  ['R0lGOD', 'image/gif'],
  ['UklGR', 'image/webp'],
];

/** A base64 image (Ollama sends no type) as a data URL with the type its first bytes say; JPEG when unknown. */
function dataUrl(image: string): string {
  if (image.startsWith('data:')) return image;
  const type = BASE64_SIGNATURES.find(([prefix]) => image.startsWith(prefix))?.[1] ?? 'image/jpeg';
  return `data:${type};base64,${image}`;
}

function toolCalls(value: unknown, messageIndex: number, path: string): Json[] {
  if (!Array.isArray(value)) throw invalid(path, 'must be a list of tool calls');
  return value.map((call, k) => {
    const fn = isObject(call) ? call.function : undefined;
    if (!isObject(fn) || typeof fn.name !== 'string' || fn.name === '') {
      throw invalid(`${path}.${k}.function.name`, 'Field required');
    }
    const args = fn.arguments ?? {};
    if (!isObject(args) && typeof args !== 'string')
      throw invalid(`${path}.${k}.function.arguments`, 'must be an object');
    const id = typeof (call as Json).id === 'string' && (call as Json).id !== '' ? (call as Json).id : undefined;
    return {
      id: id ?? `call_${messageIndex}_${k}`,
      type: 'function',
      function: { name: fn.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
    };
  });
}

/** A tool result, answering the first still-open call it names (id, else tool name, else the next one). */
function toolResult(message: Json, content: string, open: OpenCall[]): Json {
  const byId = typeof message.tool_call_id === 'string' ? message.tool_call_id : undefined;
  const name = typeof message.tool_name === 'string' ? message.tool_name : undefined;
  let at = byId !== undefined ? open.findIndex((c) => c.id === byId) : -1;
  if (at === -1 && name !== undefined) at = open.findIndex((c) => c.name === name);
  if (at === -1 && byId === undefined) at = 0;
  const call = at >= 0 ? open[at] : undefined;
  if (call) open.splice(at, 1);
  return { role: 'tool', tool_call_id: byId ?? call?.id ?? 'call_unmatched', content };
}
