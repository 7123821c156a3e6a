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

/** The parts of the gateway /health reads (the gateway itself is one). */
export interface HealthSources {
  readonly registry: Pick<BackendRegistry, 'list'>;
  readonly scheduler: Pick<Scheduler, 'snapshot'>;
  readonly residency: Pick<ResidencyTracker, 'view'>;
  readonly authenticator: Pick<Authenticator, 'isOpen'>;
  readonly catalog: Pick<ModelCatalog, 'collisions' | 'patterns'>;
  readonly comfy: Pick<ComfyHealth, 'inventory'>;
  readonly generations: Pick<GenerationCatalog, 'names' | 'get' | 'problems'>;
  readonly media: Pick<MediaJobs, 'running'>;
  readonly configSource: string;
  readonly startedAt: number;
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
  };
}
