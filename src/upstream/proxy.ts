import { GatewayError } from '../errors.ts';
import { SchedulerRejection, type Lease } from '../scheduler/index.ts';
import type { AttemptEnd } from './attempt-end.ts';
import { runAttempt } from './attempt.ts';
import { dropUnfitBoxes } from './call-affinity.ts';
import { refuse, reportOutcome, sendUpstreamAnswer } from './call-answers.ts';
import { failoverTicket } from './call-ticket.ts';
import { beginCall, type CallState, type ProxyCall, type ProxyDeps } from './proxy-call.ts';
import { answerForCaller, exhaustedError, rejectionError, type AttemptFailure } from './refusals.ts';
import { settleAttempt } from './settle.ts';
import { leaseAfterWake, wakingKeepalive } from './wake-wait.ts';
import { StreamKeepalive } from '../wire/sse-response.ts';

/** At most one attempt per key of the leased backend (each refusal mutes its key, so fewer in practice). */
function keyTurns(deps: ProxyDeps, lease: Lease): number {
  return deps.registry.get(lease.backend)?.keys?.size ?? 1;
}

/**
 * Forwards one call in its surface's wire format: a lease from the scheduler (parking when
 * every candidate is busy), one attempt per backend, failover to the next candidate (parking
 * again for the time left) while nothing reached the client, and the answer written back.
 * Every attempt is settled once (slot released, health, speed, outcome), and an attempt that
 * throws releases its slot before the error goes on; every answered call is reported through
 * `onOutcome`. A call refused before anything was sent comes back as a
 * thrown GatewayError, which the route renders and records.
 */
export class UpstreamProxy {
  constructor(private readonly deps: ProxyDeps) {
    if (deps.affinity) dropUnfitBoxes(deps.affinity, deps.registry);
  }

  async handle(call: ProxyCall): Promise<void> {
    const state = beginCall(this.deps, call);
    const surface = call.surface;
    const keepalive =
      state.sse &&
      new StreamKeepalive(state.sse, state.cfg.stream_keepalive_s * 1000, () =>
        surface.keepaliveFrame(this.keepaliveText(state)),
      );
    try {
      await this.run(state);
    } finally {
      keepalive?.stop();
    }
  }

  /** The failover loop: lease, attempt, settle (the slot comes back there); next candidate or park again. */
  private async run(state: CallState): Promise<void> {
    const tried = new Set<string>();
    let last: AttemptFailure | undefined;
    let lease = await this.firstLease(state);
    if (!lease) return; // refused or abandoned while parked: answered and reported already
    while (lease) {
      tried.add(lease.backend);
      state.route = lease.route;
      let end: AttemptEnd;
      try {
        end = await runAttempt(this.deps, state, lease);
        // a pooled key refused before any answer went out: the next key, on the same slot, before any other candidate
        for (
          let turns = 1;
          end.rotateKey && !state.upstream.clientGone && turns < keyTurns(this.deps, lease);
          turns++
        ) {
          const { backend } = lease;
          this.deps.log.warn(
            { backend, reqId: state.call.req.id, error: end.error },
            'a key was refused; trying the next',
          );
          end = await runAttempt(this.deps, state, lease);
        }
      } catch (err) {
        lease.release();
        // once the stream's head is out (a keep-alive wrote it) the route can no longer answer:
        // a refusal ends the stream here, in the surface's shape, and is on record
        if (err instanceof GatewayError && state.sse?.headWritten) return refuse(this.deps, state, err, lease.backend);
        throw err;
      }
      settleAttempt(this.deps, state, lease, end);
      if (!end.failover) return;
      last = {
        backend: lease.backend,
        error: end.error!,
        health: end.health,
        answer: end.answer,
        badAnswer: end.badAnswer,
      };
      this.deps.log.warn(
        { backend: last.backend, reqId: state.call.req.id, error: last.error },
        'upstream attempt failed; trying the next candidate',
      );
      lease = state.upstream.clientGone ? null : await this.nextLease(state, tried);
    }
    if (state.upstream.clientGone) {
      reportOutcome(this.deps, state, { backend: last?.backend ?? null, status: 499, reason: 'client_closed' });
      return;
    }
    if (last?.answer) {
      sendUpstreamAnswer(state, last.backend, answerForCaller(last.answer, this.deps, state.call.req));
      reportOutcome(this.deps, state, {
        backend: last.backend,
        status: last.answer.status,
        reason: 'upstream_error',
        responseBody: state.cfg.capture_bodies ? last.answer.text : undefined,
      });
      return;
    }
    refuse(
      this.deps,
      state,
      exhaustedError(last, this.deps.refusals?.seesNames(state.call.req)),
      last?.backend ?? null,
    );
  }

  /** The call's first lease, parking if need be; null when it was refused (already answered). */
  private async firstLease(state: CallState): Promise<Lease | null> {
    try {
      return await this.deps.scheduler.acquire(state.ticket);
    } catch (thrown) {
      if (!(thrown instanceof SchedulerRejection)) throw thrown;
      // every candidate down: sleeping boxes with `wake` are woken and waited for (wake-wait.ts)
      const woken = thrown.reason === 'no_backend' ? await leaseAfterWake(this.deps, state) : undefined;
      if (woken && !(woken instanceof Error)) return woken;
      const err = woken ?? thrown;
      if (err instanceof GatewayError) {
        refuse(this.deps, state, err, null);
        return null;
      }
      if (err.reason === 'aborted') {
        reportOutcome(this.deps, state, { status: 499, reason: 'client_closed_while_parked' });
        return null;
      }
      refuse(this.deps, state, rejectionError(err, state.alias, this.deps.refusals?.explain(state.call, err)), null);
      return null;
    }
  }

  /**
   * After a failed attempt: a free candidate not tried yet, else park on the busy ones for the
   * time the call has left; null when there is none or the wait ran out.
   */
  private async nextLease(state: CallState, tried: ReadonlySet<string>): Promise<Lease | null> {
    const { scheduler } = this.deps;
    const untried = () => state.candidates().filter((c) => !tried.has(c.backend));
    const candidates = untried();
    const now = scheduler.tryAcquireNow(candidates, tried, state.ticket);
    if (now) return now;
    const parkMs = state.parkDeadline - this.deps.now();
    if (parkMs <= 0 || scheduler.order(candidates).length === 0) return null;
    state.upstream.renew();
    const refresh = state.call.refreshCandidates && untried;
    state.ticket = failoverTicket(state.ticket, candidates, parkMs, state.upstream.signal, refresh, tried);
    try {
      return await scheduler.acquire(state.ticket);
    } catch (err) {
      if (err instanceof SchedulerRejection) return null;
      throw err;
    }
  }

  private keepaliveText(state: CallState): string {
    const waking =
      state.waking && wakingKeepalive(this.deps.wake, state, this.deps.refusals?.seesNames(state.call.req) ?? true);
    if (waking) return waking;
    // its place in line, how long it has waited, and its predicted wait when the scheduler has one
    const where = this.deps.scheduler.queuePosition(state.ticket);
    if (where) {
      const waited = `queued position=${where.position} waited_s=${Math.round(where.waitedMs / 1000)}`;
      const eta = where.etaS;
      if (eta === undefined || !Number.isFinite(eta)) return waited;
      // whole seconds, but a wait under 10 s keeps its tenth (0.4 s is not "0")
      return `${waited} eta_s=${eta < 10 ? eta.toFixed(1) : Math.round(eta)}`;
    }
    return state.sse?.dataWritten ? 'keepalive' : 'waiting for first token';
  }
}
