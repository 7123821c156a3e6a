/**
 * A media job whose boxes are all down: when they are sleeping boxes with `wake`
 * (backends/wake/waker.ts), the packet goes and the job parks for them through their boot, its
 * park time lengthened by what is left of their boot window. A box that does not wake in time
 * fails the job with `backend_not_awake`. Only on the refused path.
 */
import type { Waker } from '../backends/wake/waker.ts';
import { SchedulerRejection, type Lease, type Scheduler, type Ticket } from '../scheduler/index.ts';

/** What a media job uses of the waker. */
export type MediaWake = Pick<Waker, 'wakeFor' | 'anyUp'>;

/** A job's boxes did not answer within their boot window. */
export class NotAwakeError extends Error {
  readonly code = 'backend_not_awake';
}

/**
 * The job's lease, waking its boxes when every one is down asleep; `onTicket` is told of the
 * ticket parked now (for the job's queue position). Rejects as `acquire` does, or NotAwakeError.
 */
export async function acquireWaking(
  scheduler: Pick<Scheduler, 'acquire'>,
  wake: MediaWake | undefined,
  ticket: Ticket,
  onTicket: (ticket: Ticket) => void,
): Promise<Lease> {
  try {
    return await scheduler.acquire(ticket);
  } catch (err) {
    if (!(err instanceof SchedulerRejection) || err.reason !== 'no_backend' || !wake) throw err;
    const plan = wake.wakeFor(ticket.candidates.map((c) => c.backend));
    if (!plan) throw err;
    const notAwake = new NotAwakeError(
      `${plan.backends.join(', ')} did not wake in time: a Wake-on-LAN packet was sent and no answer came ` +
        'within its boot_timeout_s',
    );
    if (plan.extraMs <= 0) throw notAwake;
    const waking: Ticket = { ...ticket, parkMs: ticket.parkMs + plan.extraMs, parkWhileDown: true };
    onTicket(waking);
    try {
      return await scheduler.acquire(waking);
    } catch (second) {
      if (second instanceof SchedulerRejection && second.reason === 'park_timeout' && !wake.anyUp(plan.backends))
        throw notAwake;
      throw second;
    }
  }
}
