import type { ServiceFigures } from './service-time.ts';
import type { BackendKind, BackendSlotSpec, BackendSlotsSnapshot } from './types.ts';

/** Live slot state of one backend. */
export interface BackendSlots {
  spec: BackendSlotSpec;
  inflight: number;
  /** Sum of the grant times (clock ms) of the leases out: their mean age is now − this ÷ inflight. */
  grantedAtSum?: number;
  lastTypeKey?: string;
  /** EWMA of output tok/s while decoding (LLM calls): `service.decodeRate`, kept here for the pick order. */
  speed?: number;
  /** What completed LLM calls taught (service-time.ts); created on the first one. */
  service?: ServiceFigures;
  /** The same per model id; created on the first call that names its model. */
  serviceByModel?: Map<string, ServiceFigures>;
  /**
   * Learnt swap cost by model id (swap-cost.ts): seconds a call that had to load that model here
   * took over a warm call; created on the first load learnt. Read with `swapSecondsFor`.
   */
  swapSeconds?: Map<string, number>;
  /** Mean over `swapSeconds` (the fallback for a model never loaded here); absent = none learnt. */
  swapSecondsMean?: number;
  /** EWMA of seconds per job, by type key (media jobs); created on the first measurement. */
  jobSeconds?: Map<string, number>;
  /**
   * Slots other gateways of a cluster hold on the backend now (and one a cluster keeps for an older
   * waiter elsewhere), as the shared ledger last said; absent = a single gateway.
   */
  external?: number;
  /** Removed from the fleet but leases are still out: kept only so they release cleanly. */
  removed: boolean;
  /** The GPU group the backend is in now; undefined = none. */
  group?: GroupSlots;
}

/** Live slot state of one GPU group: leases across its backends. */
export interface GroupSlots {
  readonly name: string;
  /** 0 = unlimited. */
  cap: number;
  /** Leases granted on the group and not yet released (on backends that since left it too). */
  inflight: number;
  /** Backends in the group, in order of joining (removed ones with leases still out included). */
  readonly members: Set<BackendSlots>;
  /** Kind of the most recent lease granted on the group. */
  lastKind?: BackendKind;
}

/** Slots in use on the backend: this gateway's leases, and the cluster's others' when it is one of several. */
export function occupied(slots: BackendSlots): number {
  return slots.external === undefined ? slots.inflight : slots.inflight + slots.external;
}

export function hasFreeSlot(slots: BackendSlots): boolean {
  return slots.spec.cap === 0 || occupied(slots) < slots.spec.cap;
}

export function groupHasFreeSlot(group: GroupSlots): boolean {
  return group.cap === 0 || group.inflight < group.cap;
}

export function kindOf(slots: BackendSlots): BackendKind {
  return slots.spec.kind ?? 'llm';
}

/** In the fleet, available and with a free slot of its own (its group not considered). */
export function canTakeLease(slots: BackendSlots): boolean {
  return !slots.removed && slots.spec.available && hasFreeSlot(slots);
}

export function backendSnapshot(slots: BackendSlots): BackendSlotsSnapshot {
  const { spec, inflight, lastTypeKey, speed, jobSeconds, service, serviceByModel, swapSeconds } = slots;
  return {
    name: spec.name,
    inflight,
    cap: spec.cap,
    paid: spec.paid,
    available: spec.available,
    lastTypeKey,
    speed,
    group: spec.group || undefined,
    kind: spec.kind ?? 'llm',
    jobSeconds: jobSeconds && jobSeconds.size > 0 ? Object.fromEntries(jobSeconds) : undefined,
    service: service && { ...service },
    serviceByModel: serviceByModel && Object.fromEntries([...serviceByModel].map(([model, f]) => [model, { ...f }])),
    swapSeconds: swapSeconds && swapSeconds.size > 0 ? Object.fromEntries(swapSeconds) : undefined,
  };
}
