import type { Clock } from './clock.ts';
import type { CallTimings } from '../wire/call-timings.ts';

/** What the scheduler needs to know about one backend's slots. */
export interface BackendSlotSpec {
  name: string;
  /** Concurrent requests allowed; 0 = unlimited. */
  cap: number;
  paid: boolean;
  /** enabled && healthy. */
  available: boolean;
  /**
   * GPU group (`gpu_group`): a lease also needs a free slot on the group. A name missing from
   * `Scheduler.configureGroups` is a group of cap 1. Absent = no group.
   */
  group?: string;
  /** What runs there: LLM calls (default) or media jobs (ranked by seconds per job). */
  kind?: BackendKind;
}

/** What a backend runs: LLM calls or media jobs (ComfyUI). */
export type BackendKind = 'llm' | 'media';

/** Limits of one GPU group, for `Scheduler.configureGroups`. */
export interface GroupLimits {
  /** Leases allowed at once across the group's backends; 0 = unlimited. */
  cap: number;
}

/** A lease was granted on a group whose previous grant was of the other kind. */
export interface GroupSwitchEvent {
  group: string;
  from: BackendKind;
  to: BackendKind;
  /** The backend the lease was granted on (of kind `to`). */
  backend: string;
}

/** One place a ticket may run: a backend and the real model id on it. */
export interface Candidate {
  backend: string;
  /** Real model id on that backend (generation alias for media); same key ⇒ no model reload. */
  model: string;
}

/** What the scheduler (and undici) use of an AbortSignal; an AbortController's signal is one. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** One call waiting for a slot. */
export interface Ticket {
  /** What the client asked for; for observability and per-alias park settings. */
  alias: string;
  candidates: Candidate[];
  /** How long the ticket may park; 0 = parking off. */
  parkMs: number;
  /** Aborts when the client goes away; a parked ticket then leaves the queue at once. */
  signal?: AbortSignalLike;
  /**
   * Re-resolves the ticket's candidates against the current fleet (routing + allow-list).
   * Called by `Scheduler.refreshCandidates()` while the ticket is parked, so it can also wait
   * on backends that gained its model or joined the fleet. Absent = the candidates are fixed.
   */
  refresh?: () => Candidate[];
  /** Prompt tokens (an estimate is fine), for the prefill term of the predicted time to first token. */
  promptTokens?: number;
  /** Who is calling, for fair share and `max_inflight`; absent = the anonymous user. */
  user?: TicketUser;
  /**
   * Conversation affinity: the backend that served this conversation's previous turn. It wins
   * while its predicted wait is at most `affinityMaxWaitMs` over the best other's.
   */
  stickTo?: string;
  /**
   * Paid spill: a paid candidate is taken only when the best unpaid predicted wait exceeds this
   * (ms), or the ticket has parked this long. 0 or absent = today's rule (paid when no unpaid
   * candidate can start now).
   */
  spillAfterMs?: number;
  /** Whether paid candidates may be used now (the paid budget, the user's cost quota); absent = yes. */
  paidAllowed?: () => boolean;
  /**
   * Park even when no candidate is available now (a sleeping box being woken): a backend coming
   * up hands the ticket its slot. Absent = such a ticket is refused with 'no_backend'.
   */
  parkWhileDown?: boolean;
  /**
   * Cluster mode: the place in line of a call that parks again after the shared ledger refused the
   * slot its first park won (cluster/scheduler.ts); it keeps its age rather than go to the back.
   */
  resume?: ParkedPlace;
}

/** A parked call's place in line: its arrival number and when it parked. */
export interface ParkedPlace {
  seq: number;
  enqueuedAt: number;
}

/** The user a ticket is charged to: fair share between users, and each user's concurrency cap. */
export interface TicketUser {
  /** One key per user: `u:<id>`, `master` or `anon`. */
  key: string;
  /** Weight in the fair share (default 1): a user of share 2 gets twice the service of one of share 1. */
  share: number;
  /** Calls of this user in flight at once; 0 = no cap. A call over the cap parks. */
  maxInflight: number;
}

/** One in-flight slot on one backend. */
export interface Lease {
  readonly backend: string;
  readonly model: string;
  /** Time spent parked before the slot was granted (0 when granted at once). */
  readonly waitedMs: number;
  /**
   * Why this backend, in words, when the pick was not simply the best free unpaid candidate (then
   * undefined). For `x-gateway-route` and the call log. One of: `sticky` (the conversation's
   * previous backend); `spill: no local slot free` (spill threshold 0); `spill: local eta 41 s >
   * 10 s`; `spill: parked 15 s >= 15 s` (the spill timer); `spill: no local box available` (no
   * unpaid candidate routable); `spill: no local slot free and no parking` (the call could not
   * park). A call whose candidates are all paid has none.
   */
  readonly route?: string;
  /** Frees the slot and hands it to the next waiter. Idempotent. */
  release(): void;
}

/** Where a parked ticket stands (`Scheduler.queuePosition`). */
export interface QueuePosition {
  /** 1 + the older parked calls served before it on its backends (or their GPU groups). */
  position: number;
  waitedMs: number;
  /**
   * Predicted seconds until it gets a slot (and its model loaded), to one decimal: the best over
   * its backends behind the calls parked ahead of it there. Absent when none of its backends
   * was ever measured (a default is no forecast).
   */
  etaS?: number;
}

/** What failover (`Scheduler.tryAcquireNow`) reads of the call's ticket: prompt size and paid spill rule. */
export type FailoverTicket = Pick<Ticket, 'promptTokens' | 'spillAfterMs' | 'paidAllowed' | 'user'>;

/** Calls ahead of a waiter per backend; `atLeast`: the count stopped at its limit, so these are lower bounds. */
export interface AheadCount {
  byBackend: ReadonlyMap<string, number>;
  atLeast: boolean;
}

/**
 * Why a ticket got no lease. 'paid_budget': its only candidates are paid and its paid gate
 * (`Ticket.paidAllowed`) is closed; it never parks. 'cluster_unavailable': cluster mode, and the
 * shared ledger (Redis) does not answer.
 */
export type RejectReason =
  'no_backend' | 'parking_off' | 'queue_full' | 'park_timeout' | 'aborted' | 'paid_budget' | 'cluster_unavailable';

/**
 * Why a ticket got no lease; `retryAfter` (seconds) is set where the client should retry (for a
 * 'park_timeout', from its predicted wait: ETA rounded up within [1, 3600], else 2). A
 * 'park_timeout' also says, per backend the ticket waited on, how many older calls were still
 * queued there when its wait ended (`ahead`), so the refusal can say "N ahead".
 */
export class SchedulerRejection extends Error {
  readonly reason: RejectReason;
  readonly retryAfter?: number;
  readonly ahead?: AheadCount;

  constructor(reason: RejectReason, message: string, retryAfter?: number, ahead?: AheadCount) {
    super(message);
    this.name = 'SchedulerRejection';
    this.reason = reason;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
    if (ahead !== undefined) this.ahead = ahead;
  }
}

export interface SchedulerOptions {
  clock: Clock;
  /** Waiters allowed at once; one more is refused with 'queue_full'. */
  maxParked: number;
  /** A waiter parked longer than this beats model affinity at hand-off. */
  affinityMaxWaitMs: number;
  /**
   * Called synchronously, right after the grant, when a group switches between LLM and media
   * work (not for a group's first grant). It should only start work (fire and forget); what it
   * throws is caught and ignored.
   */
  onGroupSwitch?: (e: GroupSwitchEvent) => void;
  /** What the boxes hold (backends/residency.ts); absent = residency unknown everywhere. */
  fleet?: FleetView;
}

/** What the scheduler reads of the fleet beyond its own slots. */
export interface FleetView {
  /** Whether `model` is loaded on `backend` now: true, false, or undefined when not known. */
  isResident(backend: string, model: string): boolean | undefined;
}

export interface BackendSlotsSnapshot {
  name: string;
  inflight: number;
  cap: number;
  paid: boolean;
  available: boolean;
  /** Type key of the most recent lease granted on the backend. */
  lastTypeKey?: string;
  /** EWMA of output tokens per second while decoding (= `decodeRate`); undefined = never measured. */
  speed?: number;
  /** What completed calls taught: decode and prefill rates, mean service time, sample count. */
  service?: ServiceFiguresSnapshot;
  /** The same per model id on the backend (models that completed a call). */
  serviceByModel?: Record<string, ServiceFiguresSnapshot>;
  /** GPU group, when it names one. */
  group?: string;
  kind: BackendKind;
  /** EWMA of seconds per media job, by type key (generation alias); absent = none measured. */
  jobSeconds?: Record<string, number>;
  /** Learnt swap cost (seconds of extra time to first token when the model had to load), by model id. */
  swapSeconds?: Record<string, number>;
}

/** Learnt figures of a backend or of one model on it (undefined = never measured). */
export interface ServiceFiguresSnapshot {
  /** Output tokens per second while decoding. */
  decodeRate?: number;
  /** Prompt tokens per second while prefilling. */
  prefillRate?: number;
  /** Mean seconds a completed call holds a slot. */
  serviceSeconds?: number;
  /** Completed calls learnt from. */
  samples: number;
}

export interface GroupSlotsSnapshot {
  name: string;
  inflight: number;
  /** The configured cap (1 for a group missing from the configuration); 0 = unlimited. */
  cap: number;
  /** Backends that name the group now (backends removed with leases still out are not listed). */
  members: string[];
  /** Kind of the most recent lease granted on the group. */
  lastKind?: BackendKind;
}

export interface ParkedTicketSnapshot {
  alias: string;
  /** Distinct type keys the ticket can run as, in candidate order (refreshed ones included). */
  typeKeys: string[];
  /** Distinct backends the ticket can run on, in candidate order, then those added by a refresh. */
  backends: string[];
  ageMs: number;
  remainingMs: number;
  /** Predicted seconds until it gets a slot (and its model loaded), from the scheduler's state. */
  etaS?: number;
  /** The user it is charged to (`TicketUser.key`). */
  user?: string;
}

export interface SchedulerSnapshot {
  backends: BackendSlotsSnapshot[];
  /** Oldest first. */
  parked: ParkedTicketSnapshot[];
  parkedByAlias: Record<string, number>;
  /** Configured groups and groups named by a backend, in order of first appearance. */
  groups: GroupSlotsSnapshot[];
}

export type { CallTimings } from '../wire/call-timings.ts';

/**
 * What one finished call (stream or not) says about its backend's speed (service-time.ts).
 * Only status 200 counts.
 */
export interface SpeedSample {
  status: number;
  /** Output tokens of the answer (usage `completion_tokens`). */
  outputTokens: number;
  /** Seconds the call held its slot: from the attempt's start to the end of the answer. */
  seconds: number;
  /** Prompt tokens the backend evaluated (prompt less cache hits), when known. */
  promptTokens?: number;
  /** Streams only: seconds from the attempt's start to the first token. Absent = a non-stream answer. */
  firstTokenSeconds?: number;
  /** llama.cpp timings, when the answer carried them. */
  timings?: CallTimings;
  /** The backend's own model id, for the per-model figures. */
  model?: string;
  /** The model was not resident on the box when the call was sent (it had to load): feeds the swap cost. */
  neededLoad?: boolean;
  /**
   * Other calls were in flight on the box when this one was sent: a load then waits for them to
   * drain first (llama-swap does), so its time says nothing of the swap cost alone.
   */
  busyAtDispatch?: boolean;
}
