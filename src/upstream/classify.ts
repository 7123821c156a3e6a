/**
 * What a backend's non-200 answer means for the call and for the backend. Pure rules:
 *
 * - the client's fault (400, 404, 413, 422 and any other 4xx not listed below): pass the
 *   answer through at once, never fail over; the backend is fine;
 * - the gateway's credential was refused (401, 403): fail over; the backend is marked `auth`;
 *   the client never sees a 401/403 for a key that is not its own;
 * - a model that cannot start or is still loading (llama-swap 502 "unable to start process",
 *   llama.cpp 503 "Loading model"): fail over; a load failure counts against the backend, a
 *   model still loading does not;
 * - overload or breakage (408, 429, 5xx): fail over while another candidate can take the
 *   call; the last candidate's answer reaches the client as it was (status, body,
 *   retry-after). 429 says "slow down", not "broken": it does not count as a failure.
 */
import type { BackendError } from '../backends/types.ts';
import { kindForStatus } from '../backends/errors.ts';
import { LOAD_ANSWERS } from '../backends/kinds/index.ts';

/**
 * How an attempt affects its backend's health: `ok` resets its failure count; `failure`
 * counts one (the threshold triggers a probe); `unreachable` counts one and probes at once;
 * `auth` marks it down with kind auth; `none` leaves it alone.
 */
export type HealthEffect = 'ok' | 'failure' | 'unreachable' | 'auth' | 'none';

export type StatusVerdict =
  | { action: 'pass-through' }
  | {
      action: 'failover';
      error: Omit<BackendError, 'since'>;
      health: HealthEffect;
      /** The answer may reach the client as it was, if no other candidate does better. */
      relayable: boolean;
    };

export function classifyStatus(status: number, text: string): StatusVerdict {
  const error = { kind: kindForStatus(status), status, detail: text.slice(0, 300) };
  if (status === 401 || status === 403) return { action: 'failover', error, health: 'auth', relayable: false };
  if ((status === 502 || status === 503) && LOAD_ANSWERS.some((answer) => answer.test(text))) {
    return { action: 'failover', error, health: status === 502 ? 'failure' : 'none', relayable: false };
  }
  if (status === 429) return { action: 'failover', error, health: 'none', relayable: true };
  if (status === 408 || status >= 500) return { action: 'failover', error, health: 'failure', relayable: true };
  return { action: 'pass-through' };
}
