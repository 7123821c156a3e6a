/**
 * The reading of a chat-completions SSE stream that every translator of it needs, whatever it
 * writes: what each chunk says (reasoning, text, refusal, tool-call fragments, finish reason,
 * in-stream error) and what the whole stream says for the call log (usage, first-token time,
 * content chunks, backend model). The Messages and Responses translators each own one and keep
 * only their own event-writing state machine; this class writes nothing.
 *
 * Tool calls come as fragments by call index: the id and the name usually first, the
 * arguments after, but some backends send arguments before the name, or no index at all. The
 * reader holds a call until its name is known, hands it over once (the writer opens its block
 * or item then), passes later fragments of the open call through, and drops fragments of a call
 * whose block was already closed: neither protocol can reopen one.
 *
 * Hot path: `read` parses each chunk's JSON once and keeps what it found in fields, reset per
 * chunk, instead of building an object for every chunk.
 */
import { isObject } from '../json.ts';
import { stringEnd } from '../wire/raw-json.ts';
import { usageFromLlamaCppTimings } from '../wire/llama-timings.ts';
import type { SseEvent } from '../wire/sse.ts';
import { estimatedUsage, streamSummary, type StreamSummary, type UsageSource } from '../wire/stream-usage.ts';
import { usageFromOpenAI, type Usage } from '../wire/usage.ts';

type Json = Record<string, unknown>;

/**
 * What one SSE event was: `chunk` (its fields are on the reader), `done` (the `[DONE]` marker),
 * `error` (the backend put `{"error": …}` in the stream; `chunk` holds it), or `skip` (nothing
 * to act on: a ping, a comment, a cut-off half event, or what is not a JSON object).
 */
export type ChatRead = 'chunk' | 'done' | 'error' | 'skip';

/** A tool call seen before its name: its block cannot start yet. */
export interface PendingCall {
  /** The chat call index. */
  index: number;
  id?: string;
  name?: string;
  args: string;
  /** An arguments fragment came, even an empty one (the Messages writer passes that on). */
  sawArgs: boolean;
}

export interface ChatStreamReaderOptions {
  /** The relay's clock, for the summary's first-token time. */
  now: () => number;
  /** Input tokens for the summary when the backend reports no usage. */
  promptTokenEstimate: number;
  /** Whether `delta.refusal` is read (and counts as content): the Messages protocol has no place for it. */
  refusals?: boolean;
}

const NO_CALLS: PendingCall[] = [];

/** What a chunk may say besides a text fragment: any of these words sends it through `read`. */
const MAY_SAY_MORE = /"(?:tool_calls|reasoning|refusal|usage|timings|error)|"finish_reason": ?"/;
const CONTENT_KEY = '"content":';
const OPEN_BRACE = 0x7b;
const QUOTE = 0x22;
const SPACE = 0x20;

export class ChatStreamReader {
  private readonly opts: ChatStreamReaderOptions;

  sawDone = false;
  /** The last non-empty `finish_reason`. */
  finishReason: string | undefined;
  /** Usage the backend reported (`usage`), the best source. */
  reported: Usage | undefined;
  /** Usage from llama.cpp `timings`, when no `usage` came. */
  fromTimings: Usage | undefined;
  firstTokenAt: number | undefined;
  contentChunks = 0;
  backendModel: string | undefined;
  /**
   * Arguments fragments of a call whose block was already closed (another call or text came in
   * between): a block cannot be reopened, so they are dropped and counted. No known backend
   * interleaves calls; a non-zero count says one does.
   */
  lateToolFragments = 0;

  // What the last chunk said: valid after `read` returned 'chunk' (`chunk` after 'error' too).
  chunk: Json = {};
  /** `choices[0]`, where the finish reason and the stop sequence live. */
  choice: Json | undefined;
  reasoning: string | undefined;
  text: string | undefined;
  refusal: string | undefined;
  /** The raw `delta.tool_calls`, for `toolCall` one by one (each may open a block in between). */
  toolCalls: unknown[] | undefined;
  /** This chunk's finish reason, if it has one. */
  finish: string | undefined;

  /** The chunk was counted as content already (once per chunk, whatever it carried). */
  private counted = false;
  /** The chat call index whose block is open; -1 for none. */
  private open = -1;
  private lastCall = -1;
  private lastCallId: string | undefined;
  private readonly pending = new Map<number, PendingCall>();
  private readonly closedCalls = new Set<number>();

  /** A chunk was read whole: the stream's identity (the backend's model) is known. */
  private readOne = false;

  constructor(opts: ChatStreamReaderOptions) {
    this.opts = opts;
  }

  /**
   * The fast path of the chunks that make most of a stream, those that carry only a fragment of
   * text: the fragment as the JSON string literal it is in the chunk (`"Hel\"lo"`; `""` for
   * none), for a writer to copy into its own JSON as it stands, counted like `read` counts it.
   * Undefined when the chunk may say anything else (reasoning, a tool call, a finish reason,
   * usage, an error, a second `content`, the stream's first chunk): then `read` it. Nothing is
   * parsed; a word that only looks like a signal inside the text sends the chunk the slow way.
   */
  contentLiteral(ev: SseEvent): string | undefined {
    const data = ev.data;
    if (!this.readOne || ev.incomplete || data.charCodeAt(0) !== OPEN_BRACE || MAY_SAY_MORE.test(data))
      return undefined;
    const key = data.indexOf(CONTENT_KEY);
    if (key < 0 || data.indexOf(CONTENT_KEY, key + CONTENT_KEY.length) >= 0) return undefined;
    let open = key + CONTENT_KEY.length;
    while (data.charCodeAt(open) === SPACE) open++;
    if (data.charCodeAt(open) !== QUOTE) return undefined;
    const end = stringEnd(data, open);
    if (end < 0) return undefined;
    const literal = data.slice(open, end);
    if (literal.length > 2) {
      this.counted = false; // a chunk of its own, counted once like any
      this.countContent();
    }
    return literal;
  }

  read(ev: SseEvent): ChatRead {
    const data = ev.data;
    // half an event cut off by the end of the stream is garbage, unless it is the end marker
    if (ev.incomplete && data !== '[DONE]') return 'skip';
    // comments and pings: the gateway's own keep-alive covers the client, without committing it to this backend
    if (data === '') return 'skip';
    if (data === '[DONE]') {
      this.sawDone = true;
      return 'done';
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return 'skip';
    }
    if (!isObject(chunk)) return 'skip';
    this.chunk = chunk;
    this.readOne = true;
    if (chunk.error !== undefined && chunk.error !== null) return 'error';
    if (this.backendModel === undefined && typeof chunk.model === 'string') this.backendModel = chunk.model;
    if (isObject(chunk.usage)) this.reported = usageFromOpenAI(chunk) ?? this.reported;
    if (isObject(chunk.timings)) this.fromTimings = usageFromLlamaCppTimings(chunk.timings) ?? this.fromTimings;

    this.counted = false;
    this.reasoning = this.text = this.refusal = this.toolCalls = this.finish = undefined;
    const choices = chunk.choices;
    const choice = Array.isArray(choices) && isObject(choices[0]) ? choices[0] : undefined;
    this.choice = choice;
    if (!choice) return 'chunk';
    const delta = choice.delta;
    if (isObject(delta)) {
      // newer vLLM sends the same text as both `reasoning_content` and `reasoning`: take one
      this.reasoning = nonEmpty(delta.reasoning_content) ?? nonEmpty(delta.reasoning);
      this.text = nonEmpty(delta.content);
      if (this.opts.refusals) this.refusal = nonEmpty(delta.refusal);
      if (Array.isArray(delta.tool_calls)) this.toolCalls = delta.tool_calls;
      if (this.reasoning !== undefined || this.text !== undefined || this.refusal !== undefined) this.countContent();
    }
    const finish = choice.finish_reason;
    if (typeof finish === 'string' && finish !== '') this.finish = this.finishReason = finish;
    return 'chunk';
  }

  /**
   * One tool-call fragment of this chunk: a string is arguments for the open call (write them
   * at once); a PendingCall just got its name (open its block, then `startCall`); undefined is
   * nothing to write (held until a name comes, late, or not a call).
   */
  toolCall(call: unknown): string | PendingCall | undefined {
    if (!isObject(call)) return undefined;
    const index = this.callIndex(call);
    const fn = isObject(call.function) ? call.function : undefined;
    const name = typeof fn?.name === 'string' ? fn.name : '';
    const rawArgs = fn?.arguments;
    const args = typeof rawArgs === 'string' ? rawArgs : isObject(rawArgs) ? JSON.stringify(rawArgs) : undefined;
    // a fragment with only an id or an index says nothing yet: no content for the summary
    const carried = name !== '' || (args !== undefined && args !== '');
    if (carried) this.countContent();
    if (this.open === index) return args;
    if (this.closedCalls.has(index)) {
      if (carried) this.lateToolFragments += 1;
      return undefined;
    }
    let pending = this.pending.get(index);
    if (!pending) {
      pending = { index, args: '', sawArgs: false };
      this.pending.set(index, pending);
    }
    if (pending.id === undefined && typeof call.id === 'string' && call.id !== '') pending.id = call.id;
    if (pending.name === undefined && name !== '') pending.name = name;
    if (args !== undefined) {
      pending.args += args;
      pending.sawArgs = true;
    }
    return pending.name !== undefined ? pending : undefined;
  }

  /** The chat call index whose block is open; -1 for none. */
  get openCall(): number {
    return this.open;
  }

  /** The writer opened the call's block: later fragments of it pass through `toolCall`. */
  startCall(call: PendingCall): void {
    this.closeCall();
    this.pending.delete(call.index);
    this.open = call.index;
  }

  /** The writer closed the open call's block, for good: its later fragments are late. */
  closeCall(): void {
    if (this.open !== -1) this.closedCalls.add(this.open);
    this.open = -1;
  }

  /**
   * At the end of the answer: the calls that never got a name but have arguments, in index
   * order, for a block of their own each (an empty name the client can report, rather than
   * arguments that vanish). Forgets every held call.
   */
  namelessCalls(): PendingCall[] {
    if (this.pending.size === 0) return NO_CALLS;
    const nameless = [...this.pending.values()].filter((call) => call.args !== '').sort((a, b) => a.index - b.index);
    this.pending.clear();
    return nameless;
  }

  /** The backend's count if it gave one, else llama.cpp's timings, else an estimate. */
  bestUsage(): { usage: Usage; source: UsageSource } {
    if (this.reported) return { usage: this.reported, source: 'reported' };
    if (this.fromTimings) return { usage: this.fromTimings, source: 'timings' };
    return { usage: estimatedUsage(this.opts.promptTokenEstimate, this.contentChunks), source: 'estimated' };
  }

  summary(): StreamSummary {
    const { usage, source } = this.bestUsage();
    return streamSummary({
      usage,
      usageSource: source,
      contentChunks: this.contentChunks,
      sawDone: this.sawDone,
      firstTokenAt: this.firstTokenAt,
      finishReason: this.finishReason,
      model: this.backendModel,
    });
  }

  /** The call index of a fragment; a server that sends none starts a new call with each new id. */
  private callIndex(call: Json): number {
    let index: number;
    if (typeof call.index === 'number') index = call.index;
    else if (typeof call.id === 'string' && call.id !== '' && call.id !== this.lastCallId) index = this.lastCall + 1;
    else index = Math.max(this.lastCall, 0);
    if (typeof call.id === 'string' && call.id !== '') this.lastCallId = call.id;
    this.lastCall = index;
    return index;
  }

  private countContent(): void {
    if (this.counted) return;
    this.counted = true;
    this.contentChunks += 1;
    if (this.firstTokenAt === undefined) this.firstTokenAt = this.opts.now();
  }
}

/**
 * The HTTP status an in-stream error names (`code` or `status`, 400–599), 500 when it names
 * none: the relay decides on it whether to fail over.
 */
export function inStreamErrorStatus(error: unknown): number {
  const e = isObject(error) ? error : {};
  const code = typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : undefined;
  return code !== undefined && Number.isInteger(code) && code >= 400 && code < 600 ? code : 500;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
