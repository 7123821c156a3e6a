/**
 * The configuration in force: config.yaml as last loaded (or the embedded default) merged with
 * the store's settings and backends (the store wins), and the problems of the last rejected
 * reload. What a change sets in motion is the gateway's business (gateway.ts).
 */
import type { ConfigProblem } from './config/load.ts';
import { computeEffectiveConfig } from './config/effective.ts';
import { RESTART_ONLY_KEYS } from './config/defaults.ts';
import type { GatewayConfig } from './config/types.ts';
import type { BackendsRepo } from './store/backends-repo.ts';
import type { SettingsRepo } from './store/settings-repo.ts';

export interface ConfigInForceDeps {
  fileConfig: GatewayConfig;
  /** Where the file config came from ('embedded default' when none). */
  configSource: string;
  settings: SettingsRepo;
  backends: BackendsRepo;
}

export class ConfigInForce {
  private file: GatewayConfig;
  private readonly bootFile: GatewayConfig;
  private merged: GatewayConfig;
  private problems: ConfigProblem[] = [];

  constructor(private readonly deps: ConfigInForceDeps) {
    this.file = deps.fileConfig;
    this.bootFile = deps.fileConfig;
    this.merged = this.compute();
  }

  /** The effective configuration: file ⊕ store. */
  get effective(): GatewayConfig {
    return this.merged;
  }

  /** The config file as last loaded. */
  get fileConfig(): GatewayConfig {
    return this.file;
  }

  /** Merges file and store again (the store or the file changed); answers the config in force before. */
  recompute(): GatewayConfig {
    const before = this.merged;
    this.merged = this.compute();
    return before;
  }

  /** A new valid config file (not yet merged): the keys it changes that take effect only after a restart. */
  replaceFile(fileConfig: GatewayConfig): string[] {
    const needRestart = RESTART_ONLY_KEYS.filter((k) => JSON.stringify(fileConfig[k]) !== JSON.stringify(this.file[k]));
    this.file = fileConfig;
    this.problems = [];
    return needRestart;
  }

  /** A config file that failed to load: the previous config stays in force. */
  reject(problems: ConfigProblem[]): void {
    this.problems = problems;
  }

  /** Problems of the last rejected reload (empty once a reload succeeded). */
  reloadProblems(): ConfigProblem[] {
    return this.problems;
  }

  /** One of the embedded default's loopback guesses: no config file since start-up, not in the store. */
  isEmbeddedGuess(name: string): boolean {
    return (
      this.deps.configSource === 'embedded default' &&
      this.file === this.bootFile &&
      this.file.backends.some((b) => b.name === name) &&
      !this.deps.backends.get(name)
    );
  }

  private compute(): GatewayConfig {
    return computeEffectiveConfig(this.file, {
      settings: this.deps.settings.all(),
      backends: this.deps.backends.list(),
    });
  }
}
