/** An Anthropic Messages call as its surface and attempts see it (messages-surface.ts). */
import type { ReasoningWant } from '../bridges/reasoning/switch.ts';
import type { BodyTransform } from './body-transform.ts';

export interface MessagesCall {
  /** The client's query string with its `?` (Claude Code sends `?beta=true`), or ''. */
  query: string;
  body: Record<string, unknown>;
  rawBody: string;
  /** The model name the client asked for: translated answers carry it. */
  requested: string;
  /** The reasoning switch (from `thinking` / `output_config.effort`) and sampling defaults, for chat backends. */
  transformFor?: (want: ReasoningWant | undefined) => BodyTransform;
}
