/**
 * A Messages conversation as a chat-completions `messages` array.
 *
 * The two APIs cut a conversation differently. Anthropic keeps a tool call and its result
 * inside the assistant and user turns (`tool_use` / `tool_result` blocks); chat completions
 * gives the calls to the assistant message (`tool_calls`) and each result its own `tool`
 * message, which must come right after that assistant message. So a user turn is split: its
 * tool results first, in order, then whatever else the user said as one user message.
 *
 * Thinking blocks in the history are dropped: their signatures only mean something to
 * Anthropic, and chat templates either ignore past reasoning or want it in their own field.
 */
import {
  asContent,
  blocksOf,
  documentParts,
  imagePart,
  joinedText,
  readText,
  searchResultPart,
  textPart,
  unsupportedBlock,
  type ChatPart,
  type ContentContext,
} from './request-content.ts';
import { invalid, isObject, type Json } from './types.ts';

export type ChatMessage = Json;

/**
 * How a failed tool result is marked for the model. Chat completions has no `is_error`, and a
 * model that cannot tell a failure from output goes on as if the call had worked; a short,
 * unusual tag in front of the text is read correctly by every model and never collides with
 * ordinary tool output.
 */
export const TOOL_ERROR_PREFIX = '[tool error] ';

/** System blocks are joined with a blank line, as separate paragraphs of one prompt. */
const SYSTEM_SEPARATOR = '\n\n';

/** The top-level `system` (a string or text blocks) as the first message, or nothing when empty. */
export function systemMessage(system: unknown, ctx: ContentContext): ChatMessage | undefined {
  if (system === undefined || system === null) return undefined;
  const content = systemContent(system, 'system', ctx);
  return content === '' ? undefined : { role: 'system', content };
}

function systemContent(content: unknown, path: string, ctx: ContentContext): string | ChatPart[] {
  const parts = blocksOf(content, path).map((block, i) => {
    if (block.type !== 'text')
      throw invalid(`${path}.${i}.type`, `system content must be text blocks (got "${String(block.type)}")`);
    return textPart(readText(block, `${path}.${i}`), block, ctx);
  });
  return joinedText(parts, SYSTEM_SEPARATOR);
}

export function conversation(messages: unknown, ctx: ContentContext): ChatMessage[] {
  if (!Array.isArray(messages)) throw invalid('messages', 'must be an array of messages');
  if (messages.length === 0) throw invalid('messages', 'at least one message is required');
  const out: ChatMessage[] = [];
  messages.forEach((message, i) => {
    const path = `messages.${i}`;
    if (!isObject(message)) throw invalid(path, 'must be a message object');
    if (message.content === undefined) throw invalid(`${path}.content`, 'Field required');
    switch (message.role) {
      case 'user':
        out.push(...userTurn(message.content, `${path}.content`, ctx));
        break;
      case 'assistant': {
        const turn = assistantTurn(message.content, `${path}.content`, ctx);
        if (turn) out.push(turn);
        break;
      }
      case 'system':
        // Claude Code puts system reminders among the messages, even last: they stay where they are
        out.push({ role: 'system', content: systemContent(message.content, `${path}.content`, ctx) });
        break;
      default:
        throw invalid(`${path}.role`, `must be "user" or "assistant" (got ${JSON.stringify(message.role)})`);
    }
  });
  return out;
}

function userTurn(content: unknown, path: string, ctx: ContentContext): ChatMessage[] {
  const toolMessages: ChatMessage[] = [];
  const toolImages: ChatPart[] = [];
  const parts: ChatPart[] = [];
  blocksOf(content, path).forEach((block, i) => {
    const at = `${path}.${i}`;
    switch (block.type) {
      case 'text':
        parts.push(textPart(readText(block, at), block, ctx));
        break;
      case 'image':
        parts.push(imagePart(block, at));
        break;
      case 'document':
        parts.push(...documentParts(block, at, ctx));
        break;
      case 'search_result':
        parts.push(searchResultPart(block, at, ctx));
        break;
      case 'tool_result': {
        const result = toolResult(block, at, ctx);
        toolMessages.push(result.message);
        toolImages.push(...result.images);
        break;
      }
      case 'thinking':
      case 'redacted_thinking':
        break;
      default:
        throw unsupportedBlock(String(block.type), at, 'a user message');
    }
  });
  // images a tool returned cannot sit in a tool message: the user message after the results carries them
  const userParts = toolImages.length ? [...toolImages, ...parts] : parts;
  if (userParts.length === 0 && toolMessages.length > 0) return toolMessages;
  toolMessages.push({ role: 'user', content: userParts.length ? asContent(userParts) : '' });
  return toolMessages;
}

/**
 * One tool message from a `tool_result` block: its text (text blocks and text documents
 * joined by newlines), marked with TOOL_ERROR_PREFIX when `is_error`, plus a note when it
 * returned images, which follow in the next user message.
 */
function toolResult(block: Json, path: string, ctx: ContentContext): { message: ChatMessage; images: ChatPart[] } {
  if (typeof block.tool_use_id !== 'string' || block.tool_use_id === '')
    throw invalid(`${path}.tool_use_id`, 'Field required');
  const texts: ChatPart[] = [];
  const images: ChatPart[] = [];
  const content = block.content ?? [];
  blocksOf(content, `${path}.content`).forEach((inner, i) => {
    const at = `${path}.content.${i}`;
    switch (inner.type) {
      case 'text':
        texts.push(textPart(readText(inner, at), inner, ctx));
        break;
      case 'image':
        images.push(imagePart(inner, at));
        break;
      case 'document':
        for (const part of documentParts(inner, at, ctx)) (part.type === 'text' ? texts : images).push(part);
        break;
      case 'search_result':
        texts.push(searchResultPart(inner, at, ctx));
        break;
      default:
        throw unsupportedBlock(String(inner.type), at, 'a tool_result');
    }
  });
  if (images.length)
    texts.push({
      type: 'text',
      text:
        `[${images.length} image${images.length === 1 ? '' : 's'} from this result follow in the ` +
        `next user message]`,
    });
  if (block.is_error === true) {
    const first = texts[0];
    if (first && first.type === 'text') first.text = TOOL_ERROR_PREFIX + first.text;
    else texts.unshift({ type: 'text', text: TOOL_ERROR_PREFIX.trimEnd() });
  }
  // a breakpoint on the result itself belongs to its last part
  if (ctx.promptCache && isObject(block.cache_control)) {
    if (texts.length === 0) texts.push({ type: 'text', text: '' });
    const last = texts[texts.length - 1];
    if (last.type === 'text') last.cache_control = block.cache_control;
  }
  const message = { role: 'tool', tool_call_id: block.tool_use_id, content: joinedText(texts, '\n') };
  return { message, images };
}

/** Text becomes the content, tool_use blocks the `tool_calls` in order; a turn of only thinking is dropped. */
function assistantTurn(content: unknown, path: string, ctx: ContentContext): ChatMessage | undefined {
  if (typeof content === 'string') return { role: 'assistant', content };
  const parts: ChatPart[] = [];
  const toolCalls: Json[] = [];
  blocksOf(content, path).forEach((block, i) => {
    const at = `${path}.${i}`;
    switch (block.type) {
      case 'text':
        parts.push(textPart(readText(block, at), block, ctx));
        break;
      case 'tool_use':
        toolCalls.push(toolCall(block, at));
        break;
      case 'thinking':
      case 'redacted_thinking':
        break;
      default:
        throw unsupportedBlock(String(block.type), at, 'an assistant message');
    }
  });
  if (toolCalls.length)
    return { role: 'assistant', content: parts.length ? asContent(parts) : null, tool_calls: toolCalls };
  if (parts.length) return { role: 'assistant', content: asContent(parts) };
  return undefined;
}

function toolCall(block: Json, path: string): Json {
  if (typeof block.id !== 'string' || block.id === '') throw invalid(`${path}.id`, 'Field required');
  if (typeof block.name !== 'string' || block.name === '') throw invalid(`${path}.name`, 'Field required');
  const input = block.input ?? {};
  if (!isObject(input)) throw invalid(`${path}.input`, 'must be an object');
  return { id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(input) } };
}
