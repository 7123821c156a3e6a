import type { Lease } from '../scheduler/index.ts';
import type { AttemptEnd } from './attempt-end.ts';
import { reportOutcome } from './call-answers.ts';
import { learnAffinity } from './call-affinity.ts';
import type { CallState, ProxyDeps } from './proxy-call.ts';

/**
 * The one place an attempt ends, once: its slot comes back, its backend's health and speed
 * learn from it, and an attempt that answered the client reports the call's outcome.
 */
export function settleAttempt(deps: ProxyDeps, state: CallState, lease: Lease, end: AttemptEnd): void {
  lease.release();
  const backend = lease.backend;
  const { registry, scheduler } = deps;
  const error = end.error ?? { kind: 'error' as const, detail: 'attempt failed' };
  switch (end.health) {
    case 'ok':
      registry.recordSuccess(backend);
      break;
    case 'failure':
      if (registry.recordFailure(backend, deps.config().failure_threshold)) deps.probe(backend);
      break;
    case 'unreachable':
      registry.recordFailure(backend, deps.config().failure_threshold);
      deps.probe(backend);
      break;
    case 'auth':
      registry.markDown(backend, { ...error, kind: 'auth' });
      break;
    case 'none':
      break;
  }
  if (end.speed) scheduler.recordSpeed(backend, end.speed);
  if (state.conversation !== undefined) {
    learnAffinity(deps.affinity!, {
      key: state.conversation,
      backend,
      end,
      clientGone: state.upstream.clientGone,
      now: deps.now(),
      ttlMs: state.cfg.affinity_ttl_s * 1000,
    });
  }
  if (end.outcome) reportOutcome(deps, state, end.outcome);
}
