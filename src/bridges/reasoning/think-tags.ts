import { isObject } from '../../json.ts';
/**
 * `reasoning_as_content: think_tags`: the backend's separate reasoning field
 * (`reasoning_content` from llama.cpp / vLLM, `reasoning` from Ollama / OpenRouter, newer vLLM
 * sending both with the same text) folded back into the content as `<think>…</think>`, for
 * clients that show only `content` and know the tag convention the models themselves use.
 *
 * Stream: the open tag goes before the first reasoning text, the close tag before the first
 * content or tool call after it, or with the finish reason when the reasoning is all there is.
 * State is kept per choice index (`n > 1`). A chunk is parsed only when its text mentions
 * "reasoning" or a tag is open; every other chunk is returned as the same string, so the caller
 * can forward its bytes untouched. `reasoning_details` (OpenRouter's structured copy) is left
 * as it is: clients that read it want it, the others ignore it.
 */

type Json = Record<string, unknown>;

const OPEN = '<think>';
const CLOSE = '</think>';

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Removes the text reasoning fields (not an object-valued one, which is not ours to judge). */
function dropReasoningFields(holder: Json): boolean {
  let dropped = false;
  for (const key of ['reasoning_content', 'reasoning']) {
    if (key in holder && (typeof holder[key] === 'string' || holder[key] === null)) {
      delete holder[key];
      dropped = true;
    }
  }
  return dropped;
}

export class ThinkTagsRelabel {
  /** Choice indexes with an open `<think>` not yet closed. */
  private readonly open = new Set<number>();

  /** The data text to send for one stream chunk (the same string when nothing changes). */
  relabelChunk(data: string): string {
    if (this.open.size === 0 && !data.includes('reasoning')) return data;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return data;
    }
    if (!isObject(chunk) || !Array.isArray(chunk.choices)) return data;
    let changed = false;
    chunk.choices.forEach((choice, position) => {
      if (isObject(choice) && this.relabelChoice(choice, position)) changed = true;
    });
    return changed ? JSON.stringify(chunk) : data;
  }

  /** A non-stream completion, relabelled in place; returns whether anything changed. */
  relabelMessage(completion: Record<string, unknown>): boolean {
    if (!Array.isArray(completion.choices)) return false;
    let changed = false;
    for (const choice of completion.choices) {
      const message = isObject(choice) ? choice.message : undefined;
      if (!isObject(message)) continue;
      const reasoning = nonEmpty(message.reasoning_content) ?? nonEmpty(message.reasoning);
      if (reasoning === undefined) continue;
      const content = typeof message.content === 'string' ? message.content : '';
      dropReasoningFields(message);
      message.content = `${OPEN}${reasoning}${CLOSE}${content}`;
      changed = true;
    }
    return changed;
  }

  private relabelChoice(choice: Json, position: number): boolean {
    const index = typeof choice.index === 'number' ? choice.index : position;
    let changed = false;
    let delta = isObject(choice.delta) ? choice.delta : undefined;
    if (delta) {
      const reasoning = nonEmpty(delta.reasoning_content) ?? nonEmpty(delta.reasoning);
      // an empty or null field (`"reasoning_content": null` next to content) is no reasoning:
      // the chunk stays as it came
      if (reasoning !== undefined && dropReasoningFields(delta)) changed = true;
      const content = nonEmpty(delta.content);
      const toolCall = Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0;
      let text = '';
      if (reasoning !== undefined) {
        if (!this.open.has(index)) text += OPEN;
        this.open.add(index);
        text += reasoning;
      }
      if (this.open.has(index) && (content !== undefined || toolCall)) {
        text += CLOSE;
        this.open.delete(index);
      }
      if (content !== undefined) text += content;
      if (text !== (content ?? '')) {
        delta.content = text;
        dropReasoningFields(delta); // rewritten anyway: a leftover null goes too
        changed = true;
      }
    }
    const finish = choice.finish_reason;
    if (typeof finish === 'string' && finish !== '' && this.open.has(index)) {
      if (!delta) {
        delta = {};
        choice.delta = delta;
      }
      delta.content = `${typeof delta.content === 'string' ? delta.content : ''}${CLOSE}`;
      this.open.delete(index);
      changed = true;
    }
    return changed;
  }
}
