/**
 * The usage policy of a chat/completions SSE relay.
 *
 * The gateway always asks the backend for `stream_options.include_usage: true`, so that it can
 * log and bill every call. The tap then makes the client see what it asked for:
 *  - a client that did not ask for usage does not get the extra usage-only chunk
 *    (`choices: []` + `usage`); a `usage` field riding on a content chunk is left alone;
 *  - a client that asked for usage gets a usage chunk even when the backend sent none: it is
 *    synthesised just before `data: [DONE]`, from llama.cpp `timings` when the stream carried
 *    them, else from an estimate.
 * Along the way it records what the call log and the speed estimate need (see StreamSummary).
 *
 * Hot path: every streamed token passes through `onEvent`. Events are forwarded as their
 * original bytes; JSON is parsed only for the first chunk (to learn id/model) and for chunks
 * whose text shows a usage object, llama.cpp timings or a finish reason.
 */
import { formatSseData, type SseEvent } from './sse.ts';
import type { StreamTranslator } from './stream-translator.ts';
import { llamaCppTimings, usageFromLlamaCppTimings } from './llama-timings.ts';
import type { CallTimings } from './call-timings.ts';
import type { StreamSummary, UsageSource } from './stream-summary.ts';
import { usageFromOpenAI, type Usage } from './usage.ts';

export type { StreamSummary, UsageSource } from './stream-summary.ts';

export interface UsageTap extends StreamTranslator {
  /** Bytes to write for this upstream event: usually `ev.raw` untouched, null to drop it. */
  onEvent(ev: SseEvent): Buffer | null;
  /**
   * The synthesised usage event to write before `data: [DONE]`, or null. Decides once:
   * later calls return null. `onEvent` on the `[DONE]` event calls it too and prepends the
   * result, so a relay may either call this first or rely on `onEvent` alone.
   */
  beforeDone(): Buffer | null;
  summary(): StreamSummary;
}

export interface UsageTapOptions {
  /** Whether the client's own request had `stream_options.include_usage: true`. */
  clientWantsUsage: boolean;
  /** Prompt tokens to assume when neither usage nor timings arrive. */
  promptTokenEstimate: number;
  now: () => number;
}

type Json = Record<string, any>;

/** What a chunk's text shows, as bit flags. */
const CONTENT = 1;
const USAGE = 2;
const TIMINGS = 4;
const FINISH = 8;

export function createUsageTap(opts: UsageTapOptions): UsageTap {
  let identity: { id?: unknown; object?: unknown; created?: unknown; model?: unknown } | undefined;
  let reported: Usage | undefined;
  let fromTimings: Usage | undefined;
  let timings: CallTimings | undefined;
  let finishReason: string | undefined;
  let firstTokenAt: number | undefined;
  let contentChunks = 0;
  let sawDone = false;
  let doneDecided = false;
  let usageSynthesised = false;
  const pattern = signalPattern();

  function bestUsage(): { usage: Usage; source: UsageSource } {
    if (reported) return { usage: reported, source: 'reported' };
    if (fromTimings) return { usage: fromTimings, source: 'timings' };
    return { usage: estimatedUsage(opts.promptTokenEstimate, contentChunks), source: 'estimated' };
  }

  /** Learns from a parsed chunk; returns true when the chunk is a usage-only chunk. */
  function learn(chunk: Json, signals: number): boolean {
    if (!identity) identity = { id: chunk.id, object: chunk.object, created: chunk.created, model: chunk.model };
    const choices = chunk.choices;
    if (signals & FINISH && Array.isArray(choices)) {
      for (const choice of choices) {
        if (typeof choice?.finish_reason === 'string') finishReason = choice.finish_reason;
      }
    }
    if (signals & TIMINGS) {
      fromTimings = usageFromLlamaCppTimings(chunk.timings) ?? fromTimings;
      timings = llamaCppTimings(chunk.timings) ?? timings;
    }
    if (!(signals & USAGE)) return false;
    const usage = usageFromOpenAI(chunk);
    if (!usage) return false;
    reported = usage;
    return !Array.isArray(choices) || choices.length === 0;
  }

  function beforeDone(): Buffer | null {
    if (doneDecided) return null;
    doneDecided = true;
    if (!opts.clientWantsUsage || reported) return null;
    usageSynthesised = true;
    const chunk: Json = {};
    if (identity?.id !== undefined) chunk.id = identity.id;
    chunk.object = identity?.object ?? 'chat.completion.chunk';
    if (identity?.created !== undefined) chunk.created = identity.created;
    if (identity?.model !== undefined) chunk.model = identity.model;
    chunk.choices = [];
    chunk.usage = usageForClient(bestUsage().usage);
    return Buffer.from(formatSseData(JSON.stringify(chunk)));
  }

  function onEvent(ev: SseEvent): Buffer | null {
    const data = ev.data;
    // a half event cut off by the end of the stream is garbage, unless it is the end marker
    if (ev.incomplete && data !== '[DONE]') return null;
    if (data === '') return ev.raw;
    if (data === '[DONE]') {
      sawDone = true;
      const usageEvent = beforeDone();
      return usageEvent ? Buffer.concat([usageEvent, ev.raw]) : ev.raw;
    }
    const signals = scanSignals(data, pattern);
    if (signals & CONTENT) {
      contentChunks += 1;
      if (firstTokenAt === undefined) firstTokenAt = opts.now();
    }
    if (identity && (signals & (USAGE | TIMINGS | FINISH)) === 0) return ev.raw;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return ev.raw; // not ours to judge: forward it as it came
    }
    if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk)) return ev.raw;
    const usageOnly = learn(chunk as Json, signals);
    return usageOnly && !opts.clientWantsUsage ? null : ev.raw;
  }

  function summary(): StreamSummary {
    const { usage, source } = bestUsage();
    const result: StreamSummary = {
      usage,
      usageSource: source,
      outputTokens: usage.completion_tokens,
      contentChunks,
      sawDone,
      usageSynthesised,
    };
    if (firstTokenAt !== undefined) result.firstTokenAt = firstTokenAt;
    if (finishReason !== undefined) result.finishReason = finishReason;
    if (typeof identity?.model === 'string') result.model = identity.model;
    if (timings !== undefined) result.timings = timings;
    return result;
  }

  return {
    onEvent,
    beforeDone,
    summary,
    get ended() {
      return sawDone;
    },
    finishedWithoutMarker: () => finishReason !== undefined,
  };
}

/** The OpenAI wire shape of a usage object (the SDK reads these fields). */
function usageForClient(usage: Usage): Json {
  const wire: Json = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
  };
  if (usage.cached_tokens !== undefined) wire.prompt_tokens_details = { cached_tokens: usage.cached_tokens };
  return wire;
}

/** A non-empty string under one of the text keys (the first character is enough). */
const TEXT_KEY = String.raw`(?:content|reasoning_content|reasoning|arguments|name|text)"\s*:\s*"[^"]`;
/** An object under `usage` or `timings`: group 1 says which. */
const OBJECT_KEY = String.raw`(usage|timings)"\s*:\s*\{`;
const FINISH_REASON_KEY = String.raw`finish_reason"\s*:\s*"`;
const SIGNAL_SOURCE = `"(?:${TEXT_KEY}|${OBJECT_KEY}|${FINISH_REASON_KEY})`;

/**
 * One pass over a chunk's text for the keys the tap cares about: a non-empty content /
 * reasoning / tool-call name or arguments / text string, a `usage` or `timings` object, a string
 * `finish_reason`. A substring scan, not a parser: a look-alike inside a JSON string has its
 * quotes escaped and does not match; a rare false hit costs one JSON.parse (or one token of
 * the estimate), never a changed byte.
 * One regex pass is several times cheaper here than one `indexOf` per key; each tap builds
 * its own because a /g regex carries `lastIndex` state.
 */
function signalPattern(): RegExp {
  return new RegExp(SIGNAL_SOURCE, 'g');
}

function scanSignals(data: string, pattern: RegExp): number {
  let signals = 0;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(data); m !== null; m = pattern.exec(data)) {
    const key = m[1];
    if (key === 'usage') signals |= USAGE;
    else if (key === 'timings') signals |= TIMINGS;
    else if (m[0].startsWith('"finish_reason"')) signals |= FINISH;
    else signals |= CONTENT;
  }
  return signals;
}

/** A StreamSummary from what a tap or a bridge learned (the fields absent stay absent). */
export function streamSummary(fields: {
  usage: Usage;
  usageSource: UsageSource;
  contentChunks: number;
  sawDone: boolean;
  firstTokenAt?: number;
  finishReason?: string;
  model?: string;
}): StreamSummary {
  const result: StreamSummary = {
    usage: fields.usage,
    usageSource: fields.usageSource,
    outputTokens: fields.usage.completion_tokens,
    contentChunks: fields.contentChunks,
    sawDone: fields.sawDone,
    usageSynthesised: false,
  };
  if (fields.firstTokenAt !== undefined) result.firstTokenAt = fields.firstTokenAt;
  if (fields.finishReason !== undefined) result.finishReason = fields.finishReason;
  if (fields.model !== undefined) result.model = fields.model;
  return result;
}

/** The usage to assume when a stream reported none: the prompt estimate and one token per content chunk. */
export function estimatedUsage(promptTokens: number, contentChunks: number): Usage {
  return { prompt_tokens: promptTokens, completion_tokens: contentChunks, total_tokens: promptTokens + contentChunks };
}
