/** What /health reads, off the gateway's live parts (no state of its own). */
import type { ConfigProblem } from './config/load.ts';
import type { Gateway } from './gateway.ts';
import type { HealthView } from './routes/health.ts';

export function gatewayHealthView(g: Gateway, reloadProblems: () => ConfigProblem[]): HealthView {
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
