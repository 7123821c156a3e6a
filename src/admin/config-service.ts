/**
 * The one service layer behind every configuration change the JSON admin API and the /ui
 * console make: validated with config.yaml's own rules (key paths as config.yaml spells them),
 * written to the store, applied live. Nothing is written when a value is refused. Generation
 * aliases (`image_models`) are also checked by the media compiler against each backend's
 * object_info (an unknown node or field refuses them; a warning does not). Backend secrets are
 * write-only: views mask them, and a blank api_key keeps the one in force.
 */
import type { BackendRegistry } from '../backends/registry.ts';
import { computeEffectiveConfig, STORE_SETTING_KEYS } from '../config/effective.ts';
import type { ConfigProblem } from '../config/problems.ts';
import { createConfigValidator, type ConfigValidator } from '../config/schema.ts';
import { validateSetting } from '../config/settings-validate.ts';
import type { BackendSpec, GatewayConfig, ImageModelEntry } from '../config/types.ts';
import { isObject } from '../json.ts';
import type { MediaInventory } from '../media/compiler/inventory.ts';
import type { SchedulerSnapshot } from '../scheduler/index.ts';
import type { BackendsRepo } from '../store/backends-repo.ts';
import type { SettingsRepo } from '../store/settings-repo.ts';
import { prepareBackend, type PreparedBackend } from './backend-input.ts';
import { probeSpec, type TestBackendResult } from './backend-probe.ts';
import { checkImageAlias, imageModelErrors, type AliasCheck, type ObjectInfoOf } from './image-models-check.ts';
import {
  backendsView,
  settingsView,
  sourceOf,
  type BackendView,
  type Result,
  type SecretSettingView,
  type SettingView,
} from './config-views.ts';

export * from './config-views.ts';
export type { TestBackendResult } from './backend-probe.ts';

export interface ConfigServiceDeps {
  /** config.yaml as validated (the embedded default when there is none). */
  fileConfig: () => GatewayConfig;
  /** The configuration in force (file merged with the store). */
  effective: () => GatewayConfig;
  settings: SettingsRepo;
  backends: BackendsRepo;
  registry: BackendRegistry;
  snapshot: () => SchedulerSnapshot;
  inventory: (backend: string) => MediaInventory | undefined;
  /** A ComfyUI backend's /object_info, when known: generation aliases are checked against it. */
  objectInfo?: ObjectInfoOf;
  /** Recomputes the effective config from file + store and applies it live. */
  apply: () => void;
  /** Runs `fn` in one store transaction (several rows of one change: all or none). */
  transaction?: (fn: () => void) => void;
  validator?: ConfigValidator;
  /** testBackend's timeout (default 10 s). */
  probeTimeoutMs?: number;
}

/**
 * The JSON a client sends for one backend: a BackendSpec, with `api_key` also `{clear: true}` (remove)
 * or blank (keep).
 */
export type BackendInput = Record<string, unknown>;

export interface SaveBackendOptions {
  /** The backend's current name when renaming it. */
  replace?: string;
  /** Adding: refuse a name already in the fleet (without it, saving a known name edits it). */
  create?: boolean;
}

type Refusal = Extract<Result, { ok: false }>;
const refused = (problems: ConfigProblem[]): Refusal => ({ ok: false, problems });
const noSuchBackend = (name: string): Refusal => ({
  ok: false,
  notFound: true,
  problems: [{ path: 'name', message: `no backend named "${name}"` }],
});
const problemId = (p: ConfigProblem) => `${p.path}\u0000${p.message}`;

export class ConfigService {
  private readonly deps: ConfigServiceDeps;
  private readonly validator: ConfigValidator;

  constructor(deps: ConfigServiceDeps) {
    this.deps = deps;
    this.validator = deps.validator ?? createConfigValidator();
  }

  private readonly changeListeners = new Set<() => void>();

  /** Calls `fn` after each change written to the store and applied (cluster mode pushes it to the others). */
  onChange(fn: () => void): () => void {
    this.changeListeners.add(fn);
    return () => this.changeListeners.delete(fn);
  }

  private applied(): void {
    this.deps.apply();
    for (const fn of this.changeListeners) fn();
  }

  // ---------------------------------------------------------------- settings

  /** Every top-level key except `backends`; `api_key` only as set / not set. */
  settingsView(): (SettingView | SecretSettingView)[] {
    return settingsView(this.deps.fileConfig(), this.deps.effective(), this.deps.settings.all());
  }

  /** One key's view (undefined for `backends` and unknown keys). */
  settingView(key: string): SettingView | SecretSettingView | undefined {
    return this.settingsView().find((v) => v.key === key);
  }

  /** Validates `value` as config.yaml's `key` (problem paths start with the key); stores and applies it. */
  setSetting(key: string, value: unknown): Result {
    if (value === undefined || value === null)
      return refused([
        { path: key, message: 'needs a value (reset the setting to go back to config.yaml or the default)' },
      ]);
    const checked = this.checkSetting(key, value);
    if (!checked.ok) return refused(checked.problems);
    this.deps.settings.set(key, checked.value);
    this.applied();
    return { ok: true };
  }

  /**
   * Several settings at once, all or nothing (an alias spans virtual_models, alias_park and
   * alias_defaults): every value is validated first, every problem reported; only then are they
   * written, and applied once.
   */
  setSettings(entries: Readonly<Record<string, unknown>>): Result {
    const checked: [string, unknown][] = [];
    const problems: ConfigProblem[] = [];
    for (const [key, value] of Object.entries(entries)) {
      if (value === undefined || value === null) {
        problems.push({
          path: key,
          message: 'needs a value (reset the setting to go back to config.yaml or the default)',
        });
        continue;
      }
      const result = this.checkSetting(key, value);
      if (result.ok) checked.push([key, result.value]);
      else problems.push(...result.problems);
    }
    if (problems.length) return refused(problems);
    if (checked.length === 0) return { ok: true, note: 'nothing changed' };
    for (const [key, value] of checked) this.deps.settings.set(key, value);
    this.applied();
    return { ok: true };
  }

  /**
   * One generation alias as it would be saved, nothing stored: the compiler's problems (errors
   * and warnings, key paths `image_models.<alias>…`) against each backend's object_info, and the
   * candidates it would have. `setSetting('image_models', …)` refuses on the errors.
   */
  checkImageAlias(alias: string, entries: ImageModelEntry[]): AliasCheck {
    return checkImageAlias(this.deps.effective(), alias, entries, this.objectInfo);
  }

  /** config.yaml's rules for the key; for `image_models` also the compiler's errors of every new or changed alias. */
  private checkSetting(
    key: string,
    value: unknown,
  ): { ok: true; value: unknown } | { ok: false; problems: ConfigProblem[] } {
    const effective = this.deps.effective();
    const checked = validateSetting(this.validator, key, value, effective.backends);
    if (!checked.ok || key !== 'image_models') return checked;
    const next = checked.value as Record<string, ImageModelEntry[]>;
    const errors = imageModelErrors(effective, effective.image_models, next, this.objectInfo);
    return errors.length ? { ok: false, problems: errors } : checked;
  }

  private readonly objectInfo: ObjectInfoOf = (backend) => this.deps.objectInfo?.(backend);

  /** Deletes the store's row: config.yaml's value (or the default) is back in force. */
  resetSetting(key: string): Result {
    if (!(STORE_SETTING_KEYS as readonly string[]).includes(key))
      return refused([{ path: key, message: 'is not a setting the store may hold' }]);
    const existed = this.deps.settings.delete(key);
    if (existed) this.applied();
    return existed ? { ok: true } : { ok: true, note: `${key} had no stored value` };
  }

  // ---------------------------------------------------------------- backends

  backendsView(): BackendView[] {
    return backendsView({
      file: this.deps.fileConfig().backends,
      stored: this.deps.backends.list(),
      effective: this.deps.effective().backends,
      registry: this.deps.registry,
      snapshot: this.deps.snapshot(),
      inventory: this.deps.inventory,
    });
  }

  backendView(name: string): BackendView | undefined {
    return this.backendsView().find((b) => b.name === name);
  }

  /**
   * Validates one backend (config.yaml's backend rules, a name unique in the fleet, and no
   * alias left naming a backend that is gone) and stores it: the store's entry replaces
   * config.yaml's of the same name. Renaming a store-only backend moves it; renaming one from
   * config.yaml disables the old name with a store override. Problems of the spec have paths
   * relative to it (`url`); those elsewhere keep their config path (`virtual_models.fast.gpu1`).
   */
  saveBackend(input: unknown, opts: SaveBackendOptions = {}): Result {
    const plan = this.planBackend(input, opts);
    if (!plan.ok) return plan;
    const { spec, renaming, disableOld, note } = plan;
    (this.deps.transaction ?? ((fn) => fn()))(() => {
      if (renaming && !disableOld) this.deps.backends.delete(opts.replace!);
      if (disableOld) this.deps.backends.upsert(disableOld);
      this.deps.backends.upsert(spec);
    });
    this.applied();
    return note ? { ok: true, note } : { ok: true };
  }

  /**
   * saveBackend's checks without saving or probing anything: every problem the input has
   * (config.yaml's backend rules, a name already in the fleet, aliases the change would leave
   * naming a backend that is gone); empty when saveBackend would accept it.
   */
  checkBackend(input: unknown, opts: SaveBackendOptions = {}): ConfigProblem[] {
    const plan = this.planBackend(input, opts);
    return plan.ok ? [] : plan.problems;
  }

  /** What saving `input` would write, or every problem that refuses it. */
  private planBackend(
    input: unknown,
    opts: SaveBackendOptions,
  ): { ok: true; spec: BackendSpec; renaming: boolean; disableOld?: BackendSpec; note?: string } | Refusal {
    const effective = this.deps.effective().backends;
    const exists = (n: string) => effective.some((b) => b.name === n);
    if (opts.replace !== undefined && !exists(opts.replace)) return noSuchBackend(opts.replace);
    const prepared = this.prepareBackend(input, opts.replace);
    const name = prepared.ok
      ? prepared.spec.name
      : isObject(input) && typeof input.name === 'string'
        ? input.name
        : undefined;
    const renaming = opts.replace !== undefined && name !== undefined && opts.replace !== name;
    const problems = prepared.ok ? [] : [...prepared.problems];
    if (name !== undefined && (opts.create || renaming) && exists(name) && !problems.some((p) => p.path === 'name')) {
      problems.push({ path: 'name', message: `a backend named "${name}" already exists` });
    }
    if (!prepared.ok || problems.length > 0) return refused(problems);
    const spec = prepared.spec;
    // the store as it will be (its order does not matter to the checks)
    const next = this.deps.backends
      .list()
      .filter((b) => b.name !== spec.name && !(renaming && b.name === opts.replace));
    let note: string | undefined;
    let disableOld: BackendSpec | undefined;
    if (renaming && this.deps.fileConfig().backends.some((b) => b.name === opts.replace)) {
      disableOld = { ...effective.find((b) => b.name === opts.replace)!, enabled: false };
      next.push(disableOld);
      note =
        `"${opts.replace}" comes from config.yaml: it is disabled with a store override ` +
        `(remove it from config.yaml to delete it)`;
    }
    next.push(spec);
    const fleet = this.newFleetProblems(next);
    if (fleet.length > 0) return refused(fleet);
    return { ok: true, spec, renaming, ...(disableOld ? { disableOld } : {}), ...(note ? { note } : {}) };
  }

  /**
   * A store-only backend is deleted; one from config.yaml cannot be, and is disabled with a
   * store override instead (the note says so). Aliases still naming a deleted backend are named
   * in the note.
   */
  removeBackend(name: string): Result {
    const spec = this.deps.effective().backends.find((b) => b.name === name);
    if (!spec) return noSuchBackend(name);
    const source = sourceOf(name, this.deps.fileConfig().backends, this.deps.backends.list());
    if (source !== 'store') {
      this.deps.backends.upsert({ ...spec, enabled: false });
      this.applied();
      return {
        ok: true,
        note:
          `"${name}" comes from config.yaml: it is disabled with a store override ` +
          `(remove it from config.yaml to delete it)`,
      };
    }
    const dangling = this.newFleetProblems(this.deps.backends.list().filter((b) => b.name !== name));
    this.deps.backends.delete(name);
    this.applied();
    if (dangling.length === 0) return { ok: true };
    return { ok: true, note: `still named by ${dangling.map((p) => p.path).join(', ')}` };
  }

  /** Drops the store's override of a config.yaml backend: config.yaml's entry is back in force. */
  resetBackend(name: string): Result {
    const source = sourceOf(name, this.deps.fileConfig().backends, this.deps.backends.list());
    if (!source) return noSuchBackend(name);
    if (source === 'config.yaml') return { ok: true, note: `"${name}" has no store override` };
    if (source === 'store')
      return refused([
        {
          path: 'name',
          message:
            `"${name}" exists only in the store: ` + `there is no config.yaml entry to go back to (remove it instead)`,
        },
      ]);
    this.deps.backends.delete(name);
    this.applied();
    return { ok: true };
  }

  /** Runtime only (not stored, lost on restart): no new work goes to it; in-flight calls and jobs finish. */
  drainBackend(name: string, on: boolean): Result {
    return this.deps.registry.setDraining(name, on) ? { ok: true } : noSuchBackend(name);
  }

  /**
   * Discovery dry run: validates `input` like saveBackend (a blank api_key uses the one of
   * `replace ?? input.name`), then asks the backend what it serves (backend-probe.ts), so
   * nothing is registered or remembered.
   */
  async testBackend(input: unknown, opts: { replace?: string } = {}): Promise<TestBackendResult> {
    const prepared = this.prepareBackend(input, opts.replace);
    if (!prepared.ok) {
      const first = prepared.problems[0];
      return { ok: false, error: `${first.path || 'backend'}: ${first.message}`, problems: prepared.problems };
    }
    return probeSpec(prepared.spec, this.deps.probeTimeoutMs ?? 10_000);
  }

  /** The input as a validated spec (backend-input.ts), against the backends in force. */
  private prepareBackend(input: unknown, replace?: string): PreparedBackend {
    return prepareBackend(input, { replace, inForce: this.deps.effective().backends, validator: this.validator });
  }

  /**
   * Problems the whole configuration would gain with `storeBackends` in the store (aliases naming a
   * backend that is gone, …).
   */
  private newFleetProblems(storeBackends: BackendSpec[]): ConfigProblem[] {
    const file = this.deps.fileConfig();
    const settings = this.deps.settings.all();
    const problemsOf = (backends: BackendSpec[]) => {
      const candidate = structuredClone(computeEffectiveConfig(file, { settings, backends }));
      const result = this.validator.validate(candidate, { source: 'store' });
      return result.ok ? [] : result.problems;
    };
    const before = new Set(problemsOf(this.deps.backends.list()).map(problemId));
    return problemsOf(storeBackends).filter((p) => !before.has(problemId(p)));
  }
}
