/**
 * The scheduler of one instance of a cluster: the local scheduler decides who gets which slot
 * exactly as on a single gateway, and the shared ledger (slot-ledger.ts) confirms each grant
 * before the call is sent. The ledger holds the cap across every instance; the local scheduler
 * counts the slots the others hold (`setExternal`) so it ranks and parks on the fleet's real
 * occupancy. A grant the ledger refuses (another instance took the slot first, or an older call
 * parked elsewhere is entitled to it) goes back to its place in the local line and waits on.
 *
 * The parked calls of every instance form one line per backend in Redis, in arrival order; a
 * freed slot goes to the oldest of them (or, within the affinity margin, the oldest for the
 * backend's latest model), whichever instance holds it. Pub/sub carries the slot counts; a
 * re-check every half second covers a lost message.
 */
import { Scheduler } from '../scheduler/scheduler.ts';
import {
  SchedulerRejection,
  type BackendSlotSpec,
  type Candidate,
  type Lease,
  type QueuePosition,
  type SchedulerOptions,
  type Ticket,
} from '../scheduler/types.ts';
import type { ClusterNode } from './node.ts';
import { SLOTS_CHANNEL, SlotLedger, type TakeVerdict, type WaitEntry } from './slot-ledger.ts';

const RECHECK_MS = 500;

/** The scheduler of a gateway: the local one, or, in a cluster, the one that shares slots through Redis. */
export function schedulerFor(cluster: ClusterNode | undefined, opts: SchedulerOptions): Scheduler {
  return cluster ? new ClusterScheduler(opts, cluster) : new Scheduler(opts);
}

export function clusterUnavailable(): SchedulerRejection {
  return new SchedulerRejection('cluster_unavailable', 'the cluster store (Redis) is unreachable', 2);
}

export class ClusterScheduler extends Scheduler {
  readonly ledger: SlotLedger;
  private readonly names = new Set<string>();
  /** The ticket each call's current attempt parks with (a refused grant parks again with a copy). */
  private readonly attempts = new WeakMap<Ticket, Ticket>();
  /** Calls in the shared lines, by wait id, with the ticket they are parked with now. */
  private readonly waiting = new Map<string, Ticket>();
  private nextWait = 0;
  private nextLease = 0;
  private readonly recheckTimer: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private affinityMs: number;

  constructor(
    opts: SchedulerOptions,
    private readonly node: ClusterNode,
  ) {
    super(opts);
    this.affinityMs = opts.affinityMaxWaitMs;
    this.ledger = new SlotLedger(node);
    this.unsubscribe = node.subscribe(SLOTS_CHANNEL, (message) => this.onSlotCount(message));
    this.recheckTimer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.recheckTimer.unref();
    node.onClose(() => this.close());
  }

  override configure(opts: Parameters<Scheduler['configure']>[0]): void {
    super.configure(opts);
    if (opts.affinityMaxWaitMs !== undefined) this.affinityMs = opts.affinityMaxWaitMs;
  }

  override upsertBackend(spec: BackendSlotSpec): void {
    this.names.add(spec.name);
    super.upsertBackend(spec);
  }

  override removeBackend(name: string): void {
    this.names.delete(name);
    super.removeBackend(name);
  }

  override acquire(ticket: Ticket): Promise<Lease> {
    if (!this.ledger.reachable) return Promise.reject(clusterUnavailable());
    return this.acquireShared(ticket);
  }

  /** Failover never takes a slot without the ledger: it parks (acquire) on the untried candidates instead. */
  override tryAcquireNow(): Lease | null {
    return null;
  }

  override queuePosition(ticket: Ticket): QueuePosition | undefined {
    return super.queuePosition(this.attempts.get(ticket) ?? ticket);
  }

  close(): void {
    clearInterval(this.recheckTimer);
    this.unsubscribe();
    this.ledger.close();
  }

  private async acquireShared(ticket: Ticket): Promise<Lease> {
    const arrivedAt = Date.now();
    const deadline = arrivedAt + ticket.parkMs;
    const waitId = `${this.node.instanceId}|${++this.nextWait}`;
    // its place in the local line is its arrival, as in the shared one, however often it parks again
    const place = this.placeNow();
    let attempt: Ticket = { ...ticket, resume: place };
    let entry: WaitEntry | undefined;
    try {
      for (;;) {
        this.attempts.set(ticket, attempt);
        const pending = super.acquire(attempt);
        if (!entry && this.parkedPlace(attempt)) {
          entry = this.joinLine(waitId, arrivedAt, deadline, attempt.candidates);
          // the counts it parked on may be old (nothing is published while nobody waits): read them now
          void this.recount([...entry.members.keys()]);
        }
        if (entry) this.waiting.set(waitId, attempt);
        const lease = await pending;
        const cap = this.capOf(lease.backend) ?? 0;
        if (cap === 0) return lease; // unlimited: nothing to share
        const leaseId = `${this.node.instanceId}|${++this.nextLease}`;
        let verdict: TakeVerdict;
        try {
          verdict = await this.ledger.take({
            backend: lease.backend,
            model: lease.model,
            leaseId,
            cap,
            waitMember: entry?.members.get(lease.backend) ?? '',
            arrivedAt,
            affinityMs: this.affinityMs,
          });
        } catch {
          lease.release();
          throw clusterUnavailable();
        }
        if (verdict.held) return this.sharedLease(lease, leaseId, arrivedAt);
        this.refused(lease, cap, verdict);
        if (!(ticket.parkMs > 0)) {
          throw new SchedulerRejection('parking_off', `every backend is busy for ${ticket.alias}`, 1);
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new SchedulerRejection(
            'park_timeout',
            `no backend for ${ticket.alias} freed within ${ticket.parkMs} ms`,
            2,
          );
        }
        entry ??= this.joinLine(waitId, arrivedAt, deadline, ticket.candidates);
        attempt = { ...ticket, parkMs: left, resume: place };
      }
    } finally {
      this.waiting.delete(waitId);
      if (entry) this.ledger.leave(entry);
    }
  }

  /** The call joins the shared line of each of its backends. */
  private joinLine(waitId: string, arrivedAt: number, deadline: number, candidates: readonly Candidate[]): WaitEntry {
    const members = new Map<string, string>();
    for (const c of candidates) if (!members.has(c.backend)) members.set(c.backend, `${waitId}|${deadline}|${c.model}`);
    const entry = { arrivedAt, members };
    this.ledger.join(entry);
    return entry;
  }

  /**
   * A grant the ledger refused gives its local slot back. The slots the others hold count here
   * from now on; when an older call parked elsewhere is entitled to the slot, it counts as taken
   * too (until the next count), and when the entitled call is parked here, it gets the slot.
   */
  private refused(lease: Lease, cap: number, verdict: Extract<TakeVerdict, { held: false }>): void {
    const { backend } = lease;
    const elsewhere = Math.max(0, verdict.leases - this.ledger.heldOn(backend));
    const entitled = verdict.entitled === '' ? undefined : verdict.entitled.split('|', 2).join('|');
    const local = entitled !== undefined && entitled.startsWith(`${this.node.instanceId}|`);
    if (!local) {
      this.setExternal(backend, entitled === undefined ? elsewhere : Math.max(cap, elsewhere + 1));
      return lease.release();
    }
    // the slot goes to the entitled call here, not to whoever is first in the local line
    this.setExternal(backend, cap, false);
    lease.release();
    this.setExternal(backend, elsewhere, false);
    const ticket = this.waiting.get(entitled);
    if (ticket && this.grantTo(ticket, backend)) return;
    // not parked here any more (it left meanwhile): the local line gets the slot
    this.setExternal(backend, cap, false);
    this.setExternal(backend, elsewhere);
  }

  private sharedLease(lease: Lease, leaseId: string, arrivedAt: number): Lease {
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.ledger.release(leaseId);
      lease.release();
    };
    const waitedMs = lease.waitedMs > 0 ? Math.max(lease.waitedMs, Date.now() - arrivedAt) : 0;
    return Object.freeze({ backend: lease.backend, model: lease.model, waitedMs, route: lease.route, release });
  }

  /** `<leases held>|<backend>` from any instance's take, release or leave. */
  private onSlotCount(message: string): void {
    const bar = message.indexOf('|');
    if (bar < 0) return;
    const leases = Number(message.slice(0, bar));
    const backend = message.slice(bar + 1);
    if (!Number.isFinite(leases) || !this.names.has(backend)) return;
    this.setExternal(backend, Math.max(0, leases - this.ledger.heldOn(backend)));
  }

  /** While calls are parked here: the slot counts of their backends, read again (covers a lost message). */
  private async recheck(): Promise<void> {
    if (!this.hasParked()) return;
    await this.recount([...this.names].filter((name) => this.parkedOn(name) > 0));
  }

  /** The slot counts of these backends across the cluster, read now. */
  private async recount(names: readonly string[]): Promise<void> {
    const backends = names.filter((name) => this.names.has(name) && (this.capOf(name) ?? 0) > 0);
    if (backends.length === 0 || !this.ledger.reachable) return;
    try {
      const counts = await this.ledger.counts(backends);
      backends.forEach((name, i) => this.setExternal(name, Math.max(0, counts[i] - this.ledger.heldOn(name))));
    } catch {
      // Redis is away: the parked calls wait on; new ones are refused
    }
  }
}
