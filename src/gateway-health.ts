/** What /health reads, off the gateway's live parts (no state of its own). */
import type { Authenticator } from './auth/authenticator.ts';
import type { BackendRegistry } from './backends/registry.ts';
import type { ResidencyTracker } from './backends/residency.ts';
import type { ConfigProblem } from './config/load.ts';
import type { ComfyHealth } from './media/comfy/health.ts';
import type { GenerationCatalog } from './media/generation-catalog.ts';
import type { MediaJobs } from './media/service.ts';
import type { HealthView } from './routes/health.ts';
import type { ModelCatalog } from './routing/catalog.ts';
import type { Scheduler } from './scheduler/index.ts';
import type { GatewayConfig } from './config/types.ts';
import type { Db } from './store/db.ts';
import { storeWritable } from './store/writable.ts';
import type { Waker } from './backends/wake/waker.ts';
import type { ClusterNode } from './cluster/node.ts';

/** The parts of the gateway /health reads (the gateway itself is one). */
export interface HealthSources {
  readonly registry: Pick<BackendRegistry, 'list' | 'keyStates'>;
  readonly scheduler: Pick<Scheduler, 'snapshot'>;
  readonly residency: Pick<ResidencyTracker, 'view'>;
  readonly authenticator: Pick<Authenticator, 'isOpen'>;
  readonly catalog: Pick<ModelCatalog, 'collisions' | 'patterns'>;
  readonly comfy: Pick<ComfyHealth, 'inventory'>;
  readonly generations: Pick<GenerationCatalog, 'names' | 'get' | 'problems'>;
  readonly media: Pick<MediaJobs, 'running'>;
  readonly configSource: string;
  readonly startedAt: number;
  readonly store: Db;
  readonly waker?: Pick<Waker, 'stateOf'>;
  readonly cluster?: Pick<ClusterNode, 'instanceId' | 'connected'>;
  config(): Pick<GatewayConfig, 'store_dir' | 'ready_requires_backend'>;
}

export function gatewayHealthView(g: HealthSources, reloadProblems: () => ConfigProblem[]): HealthView {
  const candidatesOf = (alias: string) => g.generations.get(alias)!.candidates.map((c) => c.backend);
  return {
    backends: () => g.registry.list(),
    slots: () => g.scheduler.snapshot(),
    residency: (name) => g.residency.view(name, Date.now()),
    isOpen: () => g.authenticator.isOpen(),
    aliasCollisions: () => g.catalog.collisions(),
    aliasPatterns: () => g.catalog.patterns(),
    mediaInventory: (name) => g.comfy.inventory(name),
    media: () => ({
      aliases: Object.fromEntries(g.generations.names().map((n) => [n, candidatesOf(n)])),
      problems: g.generations.problems(),
      running: g.media.running,
    }),
    configSource: g.configSource,
    reloadProblems,
    startedAt: g.startedAt,
    wake: (name) => g.waker?.stateOf(name) ?? null,
    keys: (name) => g.registry.keyStates(name) ?? null,
    readiness: () => {
      const cfg = g.config();
      const enabled = g.registry.list().filter((b) => b.spec.enabled);
      return {
        store: storeWritable(g.store, cfg.store_dir),
        configSource: g.configSource,
        reloadRejected: reloadProblems().length > 0,
        backends: {
          enabled: enabled.length,
          up: enabled.filter((b) => b.healthy).length,
          unknown: enabled.filter((b) => !b.known).length,
        },
        requiresBackend: cfg.ready_requires_backend,
        ...(g.cluster ? { cluster: { instance: g.cluster.instanceId, reachable: g.cluster.connected } } : {}),
      };
    },
  };
}
