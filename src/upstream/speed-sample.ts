/**
 * The speed sample of one finished attempt (scheduler/service-time.ts learns from it): what
 * the answer's usage and llama.cpp timings say, and how long the attempt held its slot.
 */
import { llamaCppTimings } from '../wire/llama-timings.ts';
import type { CallTimings, SpeedSample } from '../scheduler/types.ts';
import type { DispatchFacts } from '../backends/dispatch-facts.ts';
import type { Usage } from '../wire/usage.ts';

export interface SpeedFields {
  status: number;
  usage: Usage | undefined;
  timings: CallTimings | undefined;
  model: string;
  /** Seconds from the attempt's start to the end of the answer. */
  seconds: number;
  /** Streams only: seconds from the attempt's start to the first token. */
  firstTokenSeconds?: number;
  /** What the gateway knew of the box as it sent the attempt. */
  dispatch?: DispatchFacts;
}

export function speedSample(fields: SpeedFields): SpeedSample {
  const { usage } = fields;
  const sample: SpeedSample = {
    status: fields.status,
    outputTokens: usage?.completion_tokens ?? 0,
    seconds: fields.seconds,
    model: fields.model,
  };
  if (usage) sample.promptTokens = Math.max(0, usage.prompt_tokens - (usage.cached_tokens ?? 0));
  if (fields.timings) sample.timings = fields.timings;
  if (fields.firstTokenSeconds !== undefined) sample.firstTokenSeconds = fields.firstTokenSeconds;
  if (fields.dispatch?.neededLoad) {
    sample.neededLoad = true;
    if (fields.dispatch.busy) sample.busyAtDispatch = true;
  }
  return sample;
}

/** The sample of a non-stream answer: `json` is the backend's own body (llama.cpp puts `timings` on it). */
export function jsonSpeedSample(
  status: number,
  usage: Usage | undefined,
  json: Record<string, unknown>,
  model: string,
  seconds: number,
  dispatch?: DispatchFacts,
): SpeedSample {
  return speedSample({ status, usage, timings: llamaCppTimings(json.timings), model, seconds, dispatch });
}
