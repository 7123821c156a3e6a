/** How one attempt on one backend ended: what the proxy's `settle` and failover loop read. */
import type { SpeedSample } from '../scheduler/index.ts';
import type { HealthEffect } from './classify.ts';
import type { CallOutcome } from '../stats/call-outcome.ts';
import type { AttemptFailure } from './refusals.ts';

/** What an attempt (or the end of the loop) adds to the call's outcome. */
export type OutcomeFields = Partial<CallOutcome> & Pick<CallOutcome, 'status' | 'reason'>;

/** Who served an attempt: the backend, its own model id, the reasoning switch as applied, why it was chosen. */
export interface Served {
  backend: string;
  model: string;
  reasoning?: string;
  /** Why the scheduler chose the backend (`Lease.route`), when it says. */
  route?: string;
}

export interface AttemptEnd {
  health: HealthEffect;
  /** What the client got from this attempt: the call's outcome (absent when failing over). */
  outcome?: OutcomeFields;
  error?: AttemptFailure['error'];
  speed?: SpeedSample;
  /** Nothing reached the client: the next candidate should try. */
  failover?: true;
  /** With `failover`: the backend's own answer, relayed if no one does better. */
  answer?: AttemptFailure['answer'];
  /** With `failover`: the backend answered a body the gateway could not read. */
  badAnswer?: true;
  /** With `failover`: the attempt's pooled key was refused and another key of the same backend is usable. */
  rotateKey?: true;
}
