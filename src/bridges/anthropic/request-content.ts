/**
 * Anthropic content blocks as chat-completions content parts: the pieces a message is made of
 * (text, images, text documents), whichever role the message has.
 *
 * `cache_control` is dropped, except when the backend takes it on content parts (OpenRouter,
 * for Anthropic and Gemini models: `ctx.promptCache`): then a block's breakpoint rides on its
 * text part, which is why a message with one must stay an array of parts. Breakpoints on
 * images are dropped even then, as those backends honour them on text parts only.
 */
import { invalid, isObject, type Json } from './types.ts';

export type ChatPart =
  { type: 'text'; text: string; cache_control?: unknown } | { type: 'image_url'; image_url: { url: string } };

export interface ContentContext {
  /** Carry `cache_control` onto chat content parts. */
  promptCache: boolean;
}

/** Block types that only Anthropic's own server tools produce: a chat backend cannot continue them. */
const SERVER_TOOL_BLOCKS = new Set([
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'container_upload',
  'mcp_tool_use',
  'mcp_tool_result',
]);

/** `content` as a list of blocks: a string is one text block; each entry must be an object with a `type`. */
export function blocksOf(content: unknown, path: string): Json[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalid(path, 'must be a string or an array of content blocks');
  content.forEach((block, i) => {
    if (!isObject(block)) throw invalid(`${path}.${i}`, 'must be a content block object');
    if (typeof block.type !== 'string') throw invalid(`${path}.${i}.type`, 'Field required');
  });
  return content as Json[];
}

/** The 400 for a block this role cannot hold, or that no chat backend can take. */
export function unsupportedBlock(type: string, path: string, where: string): Error {
  if (SERVER_TOOL_BLOCKS.has(type)) {
    return invalid(
      `${path}.type`,
      `"${type}" blocks belong to Anthropic server tools, which a chat-completions backend cannot run`,
    );
  }
  return invalid(`${path}.type`, `content block type "${type}" is not supported in ${where}`);
}

export function readText(block: Json, path: string): string {
  if (typeof block.text !== 'string') throw invalid(`${path}.text`, 'must be a string');
  return block.text;
}

export function textPart(text: string, block: Json, ctx: ContentContext): ChatPart {
  const part: ChatPart = { type: 'text', text };
  if (ctx.promptCache && isObject(block.cache_control)) part.cache_control = block.cache_control;
  return part;
}

/** `base64` sources become data URLs, `url` sources pass as URLs; Files API ids cannot be resolved here. */
export function imagePart(block: Json, path: string): ChatPart {
  const source = block.source;
  if (!isObject(source)) throw invalid(`${path}.source`, 'Field required');
  if (source.type === 'base64') {
    if (typeof source.media_type !== 'string') throw invalid(`${path}.source.media_type`, 'must be a string');
    if (typeof source.data !== 'string') throw invalid(`${path}.source.data`, 'must be a string');
    return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === 'url') {
    if (typeof source.url !== 'string') throw invalid(`${path}.source.url`, 'must be a string');
    return { type: 'image_url', image_url: { url: source.url } };
  }
  throw invalid(
    `${path}.source.type`,
    `image source type ${JSON.stringify(source.type)} is not supported (use "base64" or "url")`,
  );
}

/**
 * A document the model can read as text: a plain-text source, or a `content` source of text
 * (and image) blocks. PDFs and Files API documents need Anthropic's own document reader: 400.
 * The title, when given, heads the text, as it is the only name the model has for it.
 */
export function documentParts(block: Json, path: string, ctx: ContentContext): ChatPart[] {
  const source = block.source;
  if (!isObject(source)) throw invalid(`${path}.source`, 'Field required');
  const title = typeof block.title === 'string' && block.title !== '' ? `${block.title}\n\n` : '';
  if (source.type === 'text') {
    if (typeof source.data !== 'string') throw invalid(`${path}.source.data`, 'must be a string');
    return [textPart(title + source.data, block, ctx)];
  }
  if (source.type === 'content') {
    const parts: ChatPart[] = title ? [{ type: 'text', text: title.trimEnd() }] : [];
    blocksOf(source.content, `${path}.source.content`).forEach((inner, i) => {
      const innerPath = `${path}.source.content.${i}`;
      if (inner.type === 'text') parts.push(textPart(readText(inner, innerPath), inner, ctx));
      else if (inner.type === 'image') parts.push(imagePart(inner, innerPath));
      else throw unsupportedBlock(String(inner.type), innerPath, 'a document');
    });
    return parts;
  }
  throw invalid(
    `${path}.source.type`,
    `"document" blocks with a ${JSON.stringify(source.type)} source are not supported by a ` +
      `chat-completions backend (only text documents are)`,
  );
}

/** A search result as the text the model would have been shown: title, source, then its text blocks. */
export function searchResultPart(block: Json, path: string, ctx: ContentContext): ChatPart {
  const texts = blocksOf(block.content ?? [], `${path}.content`).map((inner, i) =>
    readText(inner, `${path}.content.${i}`),
  );
  const title = typeof block.title === 'string' ? block.title : '';
  const source = typeof block.source === 'string' ? ` (${block.source})` : '';
  return textPart(`${title}${source}\n${texts.join('\n')}`.trim(), block, ctx);
}

/** A message's content: a plain string when it is one text without a cache breakpoint, else the parts. */
export function asContent(parts: ChatPart[]): string | ChatPart[] {
  if (parts.length === 1) {
    const only = parts[0];
    if (only.type === 'text' && only.cache_control === undefined) return only.text;
  }
  return parts;
}

/**
 * Text parts joined into one string (for roles where backends expect a string), unless a breakpoint
 * must ride on a part.
 */
export function joinedText(parts: ChatPart[], separator: string): string | ChatPart[] {
  if (parts.some((p) => p.type === 'text' && p.cache_control !== undefined)) return parts;
  return parts.map((p) => (p.type === 'text' ? p.text : '')).join(separator);
}
