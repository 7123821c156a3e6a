/**
 * An estimate of a Messages request's input tokens, for `POST /v1/messages/count_tokens` on
 * backends that have no counting endpoint, and for `message_start` before the backend reports.
 *
 * Why an estimate and not a tokenizer: the tokenizers on npm are OpenAI's BPE vocabularies
 * (js-tiktoken ~22 MB, gpt-tokenizer ~27 MB unpacked) or heuristics themselves, and none is
 * the vocabulary of the model that actually runs (Llama, Qwen, Mistral, …: each its own). An
 * exact count for the wrong vocabulary is no better than a fair estimate, at tens of
 * megabytes more. What clients use the count for (Claude Code: when to compact the context)
 * needs a number that grows with the prompt and lands near the truth.
 *
 * What it is: UTF-8 bytes / 4 of every text the model is shown — the system prompt, each
 * message's text, tool calls' names and inputs, tool results, text documents, and each tool's
 * name, description and JSON schema — plus a few tokens per message and per tool for the
 * chat template's markers, and a flat cost per image. Four bytes per token is the usual
 * ratio of English and code under modern BPE vocabularies; text in scripts of 3-byte
 * characters counts higher per character, as those vocabularies do too. Thinking blocks in
 * the history are not counted: the bridge does not send them. Never throws: an odd shape
 * counts what it can.
 */
import { isObject, type Json } from './types.ts';

const BYTES_PER_TOKEN = 4;
/** Role markers and separators a chat template wraps each message in. */
const MESSAGE_OVERHEAD = 4;
/** The template's framing of one tool definition (its `{"type":"function",…}` wrapper). */
const TOOL_OVERHEAD = 8;
/**
 * One image. Anthropic prices an image at about width × height / 750 tokens, some 1,600 for
 * the largest it keeps; open vision models take from a few hundred to a few thousand. Counting
 * the base64 bytes instead would take a screenshot for a hundred thousand tokens.
 */
const IMAGE_TOKENS = 1_600;

export function estimateInputTokens(body: Record<string, unknown>): number {
  const tally = { bytes: 0, fixed: 0 };
  if (body.system !== undefined && body.system !== null) {
    tally.fixed += MESSAGE_OVERHEAD;
    countContent(body.system, tally);
  }
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) {
      if (!isObject(message)) continue;
      tally.fixed += MESSAGE_OVERHEAD;
      countContent(message.content, tally);
    }
  }
  if (Array.isArray(body.tools)) {
    for (const tool of body.tools) {
      if (!isObject(tool)) continue;
      tally.fixed += TOOL_OVERHEAD;
      addText(tool.name, tally);
      addText(tool.description, tally);
      if (tool.input_schema !== undefined) addText(JSON.stringify(tool.input_schema), tally);
    }
  }
  return Math.ceil(tally.bytes / BYTES_PER_TOKEN) + tally.fixed;
}

interface Tally {
  bytes: number;
  fixed: number;
}

function addText(text: unknown, tally: Tally): void {
  if (typeof text === 'string') tally.bytes += Buffer.byteLength(text, 'utf8');
}

function countContent(content: unknown, tally: Tally): void {
  if (typeof content === 'string') return addText(content, tally);
  if (!Array.isArray(content)) return;
  for (const block of content) if (isObject(block)) countBlock(block, tally);
}

function countBlock(block: Json, tally: Tally): void {
  switch (block.type) {
    case 'text':
      addText(block.text, tally);
      break;
    case 'image':
      tally.fixed += IMAGE_TOKENS;
      break;
    case 'tool_use':
      addText(block.name, tally);
      addText(JSON.stringify(block.input ?? {}), tally);
      break;
    case 'tool_result':
      countContent(block.content, tally);
      break;
    case 'document':
      addText(block.title, tally);
      if (isObject(block.source)) {
        // only text sources: a PDF's base64 says nothing about its text
        if (block.source.type === 'text') addText(block.source.data, tally);
        countContent(block.source.content, tally);
      }
      break;
    case 'search_result':
      addText(block.title, tally);
      addText(block.source, tally);
      countContent(block.content, tally);
      break;
    default: // thinking blocks are not sent; other blocks are refused by the bridge
  }
}
