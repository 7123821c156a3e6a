/**
 * A call whose candidates are all down: when they are sleeping boxes with `wake`
 * (backends/wake/waker.ts), the packet goes and the call parks for them through their boot,
 * its park time lengthened by what is left of their boot window; the scheduler hands it the
 * first box that comes up. A box that does not wake in time ends the call with a 503 saying so.
 * Only on the refused path: an ordinary call never gets here.
 */
import type { WakeHook, WakePlan } from '../backends/wake/waker.ts';
import { GatewayError } from '../errors.ts';
import { SchedulerRejection, type Lease } from '../scheduler/index.ts';
import type { CallState, ProxyDeps } from './proxy-call.ts';

/**
 * After a 'no_backend' refusal: a lease once a woken box answers, a refusal (the wake's own
 * GatewayError, or the scheduler's), or undefined when the call is no case for waking.
 */
export async function leaseAfterWake(
  deps: ProxyDeps,
  state: CallState,
): Promise<Lease | GatewayError | SchedulerRejection | undefined> {
  const wake = deps.wake;
  const plan = wake?.wakeFor(state.ticket.candidates.map((c) => c.backend));
  if (!wake || !plan) return undefined;
  const names = deps.refusals?.seesNames(state.call.req) ?? true;
  if (plan.extraMs <= 0) return notAwakeError(plan, names);
  const was = state.ticket;
  state.ticket = { ...was, parkMs: was.parkMs + plan.extraMs, parkWhileDown: true };
  state.waking = plan.backends;
  try {
    return await deps.scheduler.acquire(state.ticket);
  } catch (err) {
    if (!(err instanceof SchedulerRejection)) throw err;
    if (err.reason === 'park_timeout' && !wake.anyUp(plan.backends)) return notAwakeError(plan, names);
    return err;
  } finally {
    state.waking = undefined;
  }
}

/** The keep-alive comment of a call parked for a waking box; undefined when it is not. */
export function wakingKeepalive(wake: WakeHook | undefined, state: CallState, names: boolean): string | undefined {
  const backend = state.waking?.find((b) => wake?.isWaking(b));
  if (!wake || backend === undefined) return undefined;
  const since = wake.sinceS(backend);
  const who = names ? ` backend=${backend}` : '';
  return `waking${who}${since === undefined ? '' : ` since_s=${since}`}`;
}

/** 503: the boxes did not answer within their boot window; Retry-After when the next packet may go. */
export function notAwakeError(plan: WakePlan, names: boolean): GatewayError {
  const list = plan.backends.map((b) => `\`${b}\``).join(', ');
  const subject = names ? `The backend${plan.backends.length > 1 ? 's' : ''} ${list}` : 'The backend';
  return new GatewayError({
    status: 503,
    code: 'backend_not_awake',
    type: 'api_error',
    reason: 'wake_timeout',
    retryAfter: plan.retryAfterS,
    message:
      `${subject} did not wake in time: a Wake-on-LAN packet was sent and no answer came ` +
      'within its boot_timeout_s; retry later.',
  });
}
