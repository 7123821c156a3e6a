/**
 * Backend health shared across the cluster: when this instance's own probe or call marks a
 * backend down or up, it publishes a compact change on `health`; the others apply a remote
 * *down* at once (no new calls go there, and they re-probe it themselves soon) and take a
 * remote *up* as a hint to probe now (an up is never applied unseen: this instance may not
 * reach the box). A mark applied from a message is not published again (no loops), and a
 * message older than this instance's own last verdict on that backend is ignored.
 */
import type { BackendRegistry } from '../backends/registry.ts';
import type { BackendErrorKind } from '../backends/types.ts';
import type { ClusterNode } from './node.ts';

export const HEALTH_CHANNEL = 'health';

/** One health change on the wire. */
export interface HealthChange {
  /** Backend name. */
  b: string;
  up: boolean;
  kind?: BackendErrorKind;
  status?: number;
  /** Unix ms of the verdict. */
  at: number;
  /** The instance that saw it. */
  from: string;
}

export interface HealthShareDeps {
  registry: BackendRegistry;
  probe: (name: string) => void;
  /** Ms after a remote down before this instance re-probes the backend itself. */
  reprobeMs: () => number;
  log: { debug(obj: object, msg: string): void };
}

/** A message this old (ms) is stale news: the sender's and this instance's regular checks cover it. */
const MAX_AGE_MS = 60_000;

export function shareBackendHealth(node: ClusterNode, deps: HealthShareDeps): () => void {
  const { registry } = deps;
  let applying = false;
  const timers = new Map<string, NodeJS.Timeout>();
  registry.onVerdict((name, now) => {
    if (applying) return; // a remote mark: the instance that saw it has told everyone already
    const change: HealthChange = { b: name, up: now.up, at: Date.now(), from: node.instanceId };
    if (!now.up && now.error) {
      change.kind = now.error.kind;
      if (now.error.status !== undefined) change.status = now.error.status;
    }
    node.publish(HEALTH_CHANNEL, JSON.stringify(change));
  });
  const reprobeSoon = (name: string) => {
    if (timers.has(name)) return;
    // spread a little so the instances do not all probe the box at the same moment
    const ms = deps.reprobeMs() + Math.floor(Math.random() * 500);
    const timer = setTimeout(() => {
      timers.delete(name);
      deps.probe(name);
    }, ms);
    timer.unref();
    timers.set(name, timer);
  };
  const unsubscribe = node.subscribe(HEALTH_CHANNEL, (message) => {
    const change = parseChange(message);
    if (!change || change.from === node.instanceId) return;
    const b = registry.get(change.b);
    if (!b || !b.spec.enabled) return;
    if (Date.now() - change.at > MAX_AGE_MS || (b.checkedAt !== undefined && b.checkedAt > change.at)) return;
    if (change.up) {
      if (!b.healthy) deps.probe(change.b);
      return;
    }
    if (b.healthy || !b.known) {
      deps.log.debug({ backend: change.b, from: change.from, kind: change.kind }, 'backend marked down by peer');
      applying = true;
      try {
        registry.markDown(change.b, {
          kind: change.kind ?? 'error',
          ...(change.status !== undefined ? { status: change.status } : {}),
          detail: `marked down by cluster instance ${change.from}`,
        });
      } finally {
        applying = false;
      }
      reprobeSoon(change.b);
    }
  });
  return () => {
    unsubscribe();
    for (const timer of timers.values()) clearTimeout(timer);
    timers.clear();
  };
}

function parseChange(message: string): HealthChange | undefined {
  try {
    const v = JSON.parse(message) as Partial<HealthChange>;
    if (typeof v.b !== 'string' || typeof v.up !== 'boolean' || typeof v.at !== 'number') return undefined;
    if (typeof v.from !== 'string') return undefined;
    return v as HealthChange;
  } catch {
    return undefined;
  }
}
