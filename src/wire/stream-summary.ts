/** What a relayed stream said about itself, read by the usage tap (stream-usage.ts). */
import type { CallTimings } from './call-timings.ts';
import type { Usage } from './usage.ts';

/** Where the summary's usage came from. */
export type UsageSource = 'reported' | 'timings' | 'estimated';

export interface StreamSummary {
  usage: Usage;
  usageSource: UsageSource;
  /** Clock value (from `now`) when the first content-bearing chunk arrived. */
  firstTokenAt?: number;
  /** Output tokens: `usage.completion_tokens` (counted content chunks when estimated). */
  outputTokens: number;
  /** Chunks that carried content, reasoning, or a tool call's name or arguments. */
  contentChunks: number;
  finishReason?: string;
  /** Model id the backend put on its chunks. */
  model?: string;
  sawDone: boolean;
  /** True when the tap emitted a usage chunk the backend did not send. */
  usageSynthesised: boolean;
  /** llama.cpp `timings` of the stream's last chunk that had them, for the speed figures. */
  timings?: CallTimings;
}
