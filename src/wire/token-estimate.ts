/**
 * The gateway's one token estimate, for text no tokenizer counted: about four characters of text
 * per token, at least 1 for any text, plus flat costs for what is not text (an image, a chat
 * template's markers). Pure; every estimate the gateway makes goes through `TokenTally`.
 *
 * Why an estimate and not a tokenizer: the tokenizers on npm are OpenAI's BPE vocabularies
 * (js-tiktoken ~22 MB, gpt-tokenizer ~27 MB unpacked) or heuristics themselves, and none is
 * the vocabulary of the model that actually runs (Llama, Qwen, Mistral, …: each its own). An
 * exact count for the wrong vocabulary is no better than a fair estimate, at tens of
 * megabytes more. What the counts are used for (Claude Code: when to compact the context; the
 * scheduler: how long a prefill takes; the call log: a call the backend reported no usage for)
 * needs a number that grows with the prompt and lands near the truth. Four characters per token
 * is the usual ratio of English and code under modern BPE vocabularies.
 *
 * Three callers grew three ways of measuring and rounding text before there was one estimator;
 * each is kept as a `TokenRule` so that no count a client sees moves (docs/decisions.md, "One
 * token estimator").
 */
import { isObject, type JsonObject } from '../json.ts';

/** Characters (or UTF-8 bytes, see `TokenRule.measure`) of text per token. */
export const CHARS_PER_TOKEN = 4;
/** Role markers and separators a chat template wraps each message in. */
export const MESSAGE_OVERHEAD = 4;
/** The template's framing of one tool definition (its `{"type":"function",…}` wrapper). */
export const TOOL_OVERHEAD = 8;
/**
 * One image. Anthropic prices an image at about width × height / 750 tokens, some 1,600 for
 * the largest it keeps; open vision models take from a few hundred to a few thousand. Counting
 * the base64 bytes instead would take a screenshot for a hundred thousand tokens.
 */
export const IMAGE_TOKENS = 1_600;

/** How text is sized and how a size becomes tokens. */
export interface TokenRule {
  /**
   * `utf8`: UTF-8 bytes, so text in scripts of 3-byte characters counts higher per character,
   * as BPE vocabularies do too; `utf16`: the string's length.
   */
  measure: 'utf8' | 'utf16';
  /** `up`: size ÷ 4 rounded up; `nearest`: rounded to the nearest, at least 1 for any text. */
  rounding: 'up' | 'nearest';
}

/** Messages `count_tokens` and `message_start` (and the scheduler's chat and messages calls). */
export const PROMPT_RULE: TokenRule = { measure: 'utf8', rounding: 'up' };
/** The prompt tokens of usage synthesised for chat/completions and translated Responses calls. */
export const CHAT_USAGE_RULE: TokenRule = { measure: 'utf16', rounding: 'up' };
/** A speech call's input, and the scheduler's Responses, completions and embeddings calls. */
export const TEXT_RULE: TokenRule = { measure: 'utf16', rounding: 'nearest' };

/** Tokens of `size` characters or bytes of text: 0 for none, else at least 1. */
export function tokensForSize(size: number, rounding: TokenRule['rounding']): number {
  if (size <= 0) return 0;
  return rounding === 'up' ? Math.ceil(size / CHARS_PER_TOKEN) : Math.max(1, Math.round(size / CHARS_PER_TOKEN));
}

/** A rough token count of one text: about four characters per token, at least 1 when non-empty. */
export function estimateTokens(text: string, rule: TokenRule = TEXT_RULE): number {
  return new TokenTally(rule).text(text).tokens();
}

/**
 * Which parts of a content list carry text: `blocks` reads Messages content blocks (and chat
 * parts) by their type — `text`, a flat cost per `image`, tool calls and results, documents —
 * and skips the rest (thinking is not sent; other blocks are refused by the bridge); `text` reads
 * the `text` of every part, whatever its type (Responses `input_text`, `output_text`, …).
 */
export type PartReading = 'blocks' | 'text';

/** Text sizes and flat token costs, added up under one rule; `tokens()` is the estimate. */
export class TokenTally {
  private size = 0;
  private fixed = 0;

  constructor(private readonly rule: TokenRule) {}

  /** A string's text; anything else adds nothing. */
  text(value: unknown): this {
    if (typeof value === 'string') {
      this.size += this.rule.measure === 'utf8' ? Buffer.byteLength(value, 'utf8') : value.length;
    }
    return this;
  }

  /** A value's JSON text (a tool call's input, a schema); `undefined` adds nothing. */
  json(value: unknown): this {
    return this.text(JSON.stringify(value));
  }

  /** Token ids sent as numbers (completions' `prompt`): four characters each. */
  tokenIds(count: number): this {
    this.size += count * CHARS_PER_TOKEN;
    return this;
  }

  /** Tokens that are not text: a template's markers, an image. */
  flat(tokens: number): this {
    this.fixed += tokens;
    return this;
  }

  /** A content: a string, or a list of parts read as `parts` says; anything else adds nothing. */
  content(content: unknown, parts: PartReading = 'blocks'): this {
    if (typeof content === 'string') return this.text(content);
    if (!Array.isArray(content)) return this;
    for (const part of content) {
      if (!isObject(part)) continue;
      if (parts === 'text') this.text(part.text);
      else this.block(part);
    }
    return this;
  }

  tokens(): number {
    return tokensForSize(this.size, this.rule.rounding) + this.fixed;
  }

  private block(block: JsonObject): void {
    switch (block.type) {
      case 'text':
        this.text(block.text);
        break;
      case 'image':
        this.flat(IMAGE_TOKENS);
        break;
      case 'tool_use':
        this.text(block.name).json(block.input ?? {});
        break;
      case 'tool_result':
        this.content(block.content);
        break;
      case 'document':
        this.text(block.title);
        if (isObject(block.source)) {
          // only text sources: a PDF's base64 says nothing about its text
          if (block.source.type === 'text') this.text(block.source.data);
          this.content(block.source.content);
        }
        break;
      case 'search_result':
        this.text(block.title).text(block.source).content(block.content);
        break;
      default: // thinking blocks are not sent; other blocks are refused by the bridge
    }
  }
}
