import type { Candidate, Lease, SchedulerRejection, TicketUser } from './types.ts';

/** A parked ticket. Leaves every queue at once by being marked settled. */
export interface Waiter {
  /** Monotonic arrival number: smaller = older. */
  readonly seq: number;
  readonly alias: string;
  /** Who the call is charged to (the anonymous user when the ticket named none). */
  readonly user: TicketUser;
  readonly enqueuedAt: number;
  readonly deadline: number;
  /**
   * Type keys the waiter can run as on each backend, in candidate order; backends gained by
   * `WaiterIndex.widen` come after. Change it only through the index, which queues by it.
   */
  readonly typeKeysByBackend: Map<string, readonly string[]>;
  /** Re-resolves the ticket's candidates against the current fleet; absent = fixed candidates. */
  readonly refresh?: () => Candidate[];
  readonly resolve: (lease: Lease) => void;
  readonly reject: (rejection: SchedulerRejection) => void;
  settled: boolean;
  timer: unknown;
  detachAbort?: () => void;
}
