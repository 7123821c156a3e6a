/** One call on Ollama's native API, as its route hands it to the surface (ollama-surface.ts). */
import type { ReasoningWant } from '../bridges/reasoning/switch.ts';
import type { BodyTransform } from './body-transform.ts';

export type OllamaEndpoint = 'chat' | 'generate' | 'embed' | 'embeddings';

export interface OllamaCall {
  endpoint: OllamaEndpoint;
  body: Record<string, unknown>;
  rawBody: string;
  /** The model name the client asked for: translated answers carry it. */
  requested: string;
  /** When the call arrived (the clock of `now`), for the `*_duration` statistics. */
  startedAt: number;
  now: () => number;
  /** The reasoning switch (from `think`) and sampling defaults, for chat backends. */
  transformFor?: (want: ReasoningWant | undefined) => BodyTransform;
}
