/**
 * The scheduler: one queue for every call. Pick a free backend now, or park until one frees;
 * a lease is one in-flight slot on one backend. Pure logic with an injected clock.
 */
export { systemClock, type Clock } from './clock.ts';
export { Scheduler } from './scheduler.ts';
export { compareBackends, compareMediaBackends } from './ordering.ts';
export { IMPLICIT_GROUP_CAP } from './groups.ts';
export { FULL_WEIGHT_TOKENS, SPEED_EWMA_ALPHA, type ServiceFigures } from './service-time.ts';
export {
  SchedulerRejection,
  type AheadCount,
  type AbortSignalLike,
  type BackendKind,
  type BackendSlotSpec,
  type BackendSlotsSnapshot,
  type Candidate,
  type GroupLimits,
  type GroupSlotsSnapshot,
  type GroupSwitchEvent,
  type Lease,
  type ParkedTicketSnapshot,
  type RejectReason,
  type SchedulerOptions,
  type SchedulerSnapshot,
  type CallTimings,
  type ServiceFiguresSnapshot,
  type SpeedSample,
  type Ticket,
  type TicketUser,
  type FleetView,
  type FailoverTicket,
  type QueuePosition,
  type ParkedPlace,
} from './types.ts';
