/**
 * The sentence of a refusal: one readable sentence for one candidate ("`badkey` is out: the
 * upstream refused the gateway's credential (401) 12 s ago."), a short list for several. A
 * caller who may not see backend names gets the same reasons without them.
 */
import type { CandidateReason } from './refusal.ts';

export interface RefusalWording {
  /** The model the client asked for. */
  requested: string;
  /** Whether the caller may see backend names. */
  names: boolean;
  /** How long the call could wait, seconds (park_timeout). */
  parkS?: number;
  /** Unix ms now, for "in N s". */
  now: number;
}

/** The reasons as the caller may see them: without `backend` unless names are visible. */
export function visibleReasons(reasons: readonly CandidateReason[], names: boolean): CandidateReason[] {
  return reasons.map(({ backend, ...rest }) => (names && backend !== undefined ? { backend, ...rest } : rest));
}

/** The error message: one sentence for one candidate, a list for several; '' when there is none. */
export function refusalText(reasons: readonly CandidateReason[], wording: RefusalWording): string {
  if (reasons.length === 0) return '';
  const named = (r: CandidateReason) => (wording.names && r.backend !== undefined ? `\`${r.backend}\`` : undefined);
  if (reasons.length === 1) {
    const only = reasons[0];
    return `${named(only) ?? `The backend serving \`${wording.requested}\``} ${clause(only, wording)}.`;
  }
  const items = reasons.map((r, i) => `${named(r) ?? `backend ${i + 1}`} ${clause(r, wording)}`);
  return `No backend can serve \`${wording.requested}\` right now: ${items.join('; ')}.`;
}

/** What is wrong with one candidate, as a predicate ("is out: …", "is draining …"). */
function clause(r: CandidateReason, wording: RefusalWording): string {
  const ago = r.since_s === undefined ? '' : ` ${duration(r.since_s)} ago`;
  const forNow = r.since_s === undefined ? '' : `, for ${duration(r.since_s)} now`;
  const status = r.status ? ` (${r.status})` : '';
  switch (r.reason) {
    case 'credential_refused':
      return `is out: the upstream refused the gateway's credential${status}${ago}`;
    case 'keys_muted': {
      const what = r.status === 429 ? 'rate-limited' : 'refused';
      return `is resting: the upstream ${what} its keys${status}${untilKeys(r, wording)}`;
    }
    case 'unreachable':
      return `is out: the gateway could not reach it${ago}`;
    case 'loading':
      return `is out: it is loading its model${status}${forNow}`;
    case 'circuit_open':
      return `is out after a failed health check${r.status ? ` (HTTP ${r.status})` : ''}${ago}${untilText(r, wording)}`;
    case 'draining':
      return `is draining (no new calls while its running ones finish)${forNow}`;
    case 'disabled':
      return 'is disabled';
    case 'unchecked':
      return 'has not answered its first health check yet';
    case 'busy':
      return 'is busy';
    case 'park_timeout':
      return `stayed busy for the whole${parkText(wording.parkS)} wait, with ${aheadText(r)}`;
  }
}

function untilText({ until }: CandidateReason, { now }: RefusalWording): string {
  if (until === undefined) return '';
  const at = Date.parse(until);
  const inS = Math.max(0, Math.round((at - now) / 1000));
  return `; it is checked again by ${until.slice(11, 19)} UTC (in ${duration(inS)})`;
}

function untilKeys({ until }: CandidateReason, { now }: RefusalWording): string {
  if (until === undefined) return '';
  return `; one is usable again in ${duration(Math.max(0, Math.round((Date.parse(until) - now) / 1000)))}`;
}

function parkText(parkS: number | undefined): string {
  return parkS === undefined ? '' : ` ${duration(parkS)}`;
}

function aheadText({ ahead = 0, ahead_at_least: atLeast }: CandidateReason): string {
  if (ahead === 0) return 'no call ahead';
  const count = ahead === 1 ? '1 call ahead' : `${ahead} calls ahead`;
  return atLeast ? `at least ${count}` : count;
}

/** Seconds as people read them: "0.5 s", "12 s", "4 min", "3 h". */
export function duration(seconds: number): string {
  if (seconds < 10 && !Number.isInteger(seconds)) return `${seconds.toFixed(1)} s`;
  const s = Math.round(seconds);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}
