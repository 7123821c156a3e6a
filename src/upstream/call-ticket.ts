/**
 * What a call's ticket tells the scheduler beyond its candidates (scheduler/types.ts `Ticket`):
 * the prompt's size, who calls, the box its conversation sticks to, the paid spill threshold
 * and the paid gate. Built once when the call starts; a failover's ticket keeps them all but a
 * sticky box the call already tried.
 */
import type { GatewayConfig } from '../config/types.ts';
import type { AbortSignalLike, Candidate, Ticket } from '../scheduler/index.ts';

/** Paid spill threshold of `alias` in ms: its `alias_defaults` entry, else the top-level `spill_after_s`. */
export function spillAfterMs(cfg: Pick<GatewayConfig, 'alias_defaults' | 'spill_after_s'>, alias: string): number {
  const own = Object.hasOwn(cfg.alias_defaults, alias) ? cfg.alias_defaults[alias].spill_after_s : undefined;
  return (own ?? cfg.spill_after_s) * 1000;
}

/** The ticket of a failover's wait: `was`'s terms on the candidates left; its sticky box only if not tried yet. */
export function failoverTicket(
  was: Ticket,
  candidates: Candidate[],
  parkMs: number,
  signal: AbortSignalLike,
  refresh: (() => Candidate[]) | undefined,
  tried: ReadonlySet<string>,
): Ticket {
  // written out, not spread (the hot path's rule)
  return {
    alias: was.alias,
    candidates,
    parkMs,
    signal,
    refresh,
    promptTokens: was.promptTokens,
    user: was.user,
    stickTo: was.stickTo && !tried.has(was.stickTo) ? was.stickTo : undefined,
    spillAfterMs: was.spillAfterMs,
    paidAllowed: was.paidAllowed,
  };
}
