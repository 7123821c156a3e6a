import type { Logger } from 'pino';
import { LogLevelFollowers } from './logging.ts';
import { BackendRegistry } from './backends/registry.ts';
import { Discovery } from './backends/discovery.ts';
import { ResidencyTracker } from './backends/residency.ts';
import { ResidencyReader } from './backends/residency-read.ts';
import { dispatchFacts } from './backends/dispatch-facts.ts';
import type { ConfigProblem } from './config/load.ts';
import type { GatewayConfig } from './config/types.ts';
import { openStore, type Db } from './store/db.ts';
import { SettingsRepo } from './store/settings-repo.ts';
import { BackendsRepo } from './store/backends-repo.ts';
import { ModelCacheRepo } from './store/model-cache-repo.ts';
import { ResponsesRepo } from './store/responses-repo.ts';
import { loadOrCreateSecretBox } from './store/secret.ts';
import type { SecretBox } from './store/secret-box.ts';
import { systemClock, type Clock, type Scheduler } from './scheduler/index.ts';
import { schedulerFor } from './cluster/scheduler.ts';
import { quotaAdmission } from './cluster/quotas.ts';
import { UpstreamPools } from './backends/pools.ts';
import { UpstreamProxy } from './upstream/proxy.ts';
import { TokenCounter } from './surfaces/count-tokens.ts';
import { ComfyHealth } from './media/comfy/health.ts';
import { ComfyClients } from './media/comfy/clients.ts';
import { GenerationCatalog } from './media/generation-catalog.ts';
import { MediaJobs } from './media/service.ts';
import { GpuSwitch } from './media/gpu-switch.ts';
import type { CallOutcome } from './stats/call-outcome.ts';
import { ModelCatalog } from './routing/catalog.ts';
import { refusalExplainer } from './routing/refusal-explainer.ts';
import { ConversationAffinity } from './routing/conversation-affinity.ts';
import { Callers } from './routes/caller.ts';
import type { HealthView } from './routes/health.ts';
import { ConfigInForce } from './gateway-config.ts';
import { GatewayAlerts } from './gateway-alerts.ts';
import { gatewayWaker, type Waker } from './gateway-wake.ts';
import { gatewayHealthView } from './gateway-health.ts';
import { groupCaps, groupMembers, renderFleetMetrics, slotSpec } from './gateway-fleet.ts';
import type { ClusterNode } from './cluster/node.ts';
import { Authenticator, effectiveMasterKey } from './auth/authenticator.ts';
import { UsersRepo } from './store/users-repo.ts';
import { IpAliasesRepo } from './store/ip-aliases-repo.ts';
import type { CallLog } from './stats/call-log.ts';
import { callLogSettings, openCallLog, recordCall } from './stats/call-recording.ts';
import { GatewayMetrics } from './stats/metrics.ts';
import { PaidGate } from './stats/paid-budget.ts';
import { ConfigService } from './admin/config-service.ts';
import { UsersService } from './admin/users-service.ts';
import { BackgroundAdmission } from './responses/admission.ts';

export interface GatewayOptions {
  /** The validated config file (or the embedded default). */
  fileConfig: GatewayConfig;
  /** Where the file config came from, for /health and the log ('embedded default' when none). */
  configSource: string;
  logger: Logger;
  clock?: Clock;
  /** Process metrics (GC, event loop) on /metrics; tests building many apps turn them off. */
  processMetrics?: boolean;
  /** This instance's cluster membership (`cluster`); absent = a single gateway. */
  cluster?: ClusterNode;
}

/**
 * Everything with a lifecycle behind the HTTP surface: store, registry, scheduler, discovery,
 * upstream pools and the proxy. One instance per app; no module-level state.
 */
export class Gateway {
  readonly store: Db;
  readonly secrets: SecretBox;
  readonly settings: SettingsRepo;
  readonly storedBackends: BackendsRepo;
  readonly modelCache: ModelCacheRepo;
  /** Stored Responses (background and store: true). */
  readonly responses: ResponsesRepo;
  readonly registry: BackendRegistry;
  readonly scheduler: Scheduler;
  readonly pools = new UpstreamPools();
  readonly discovery: Discovery;
  readonly waker: Waker; // Wake-on-LAN of sleeping boxes (`wake`, `idle_sleep`)
  /** Which models each box holds loaded: read by discovery, moved by the calls sent. */
  readonly residency: ResidencyTracker;
  readonly proxy: UpstreamProxy;
  /** Background runs admitted at create, their places held until their calls reach the scheduler. */
  readonly admission: BackgroundAdmission;
  readonly tokenCounter: TokenCounter;
  /** ComfyUI backends: executor watchdog and inventory (from /object_info). */
  readonly comfy: ComfyHealth;
  /** One ComfyUI client (and progress websocket) per ComfyUI backend in use. */
  readonly comfyClients: ComfyClients;
  /** Generation aliases (`image_models`) and their candidates. */
  readonly generations: GenerationCatalog;
  /** Media jobs: the Images API and the native job API run through it. */
  readonly media: MediaJobs;
  readonly gpuSwitch: GpuSwitch;
  readonly users: UsersRepo;
  readonly ipAliases: IpAliasesRepo;
  /** Users and IP aliases as the admin API and the console change them: one instance. */
  readonly usersService: UsersService;
  readonly authenticator: Authenticator;
  readonly callLog: CallLog;
  /** Whether paid candidates may be used now: `paid_budget_usd_month` and the user's `quota_cost_month`. */
  readonly paidGate: PaidGate;
  readonly metrics: GatewayMetrics;
  readonly catalog: ModelCatalog;
  readonly callers: Callers;
  /** Alerts to the owner's webhooks (`alerts`): backends down and up, refused keys, quotas, failing jobs. */
  readonly alerts: GatewayAlerts;
  /** What /health reads. */
  readonly health: HealthView;
  /** Settings and backends as the admin API and the console read and change them. */
  readonly admin: ConfigService;
  readonly configSource: string;
  readonly cluster?: ClusterNode;
  readonly startedAt = Date.now();
  private readonly inForce: ConfigInForce;
  private refreshQueued = false;
  private readonly log: Logger;

  constructor(opts: GatewayOptions) {
    this.log = opts.logger;
    this.cluster = opts.cluster;
    this.comfy = new ComfyHealth({ log: this.log });
    this.configSource = opts.configSource;
    this.store = openStore(opts.fileConfig.store_dir);
    this.secrets = loadOrCreateSecretBox(opts.fileConfig.store_dir, { warn: (msg) => this.log.warn(msg) });
    this.settings = new SettingsRepo(this.store);
    this.storedBackends = new BackendsRepo(this.store, this.secrets);
    this.modelCache = new ModelCacheRepo(this.store);
    this.responses = new ResponsesRepo(this.store);
    // nothing runs across a restart: what was unfinished failed
    this.responses.failUnfinished(Date.now());
    this.inForce = new ConfigInForce({
      fileConfig: opts.fileConfig,
      configSource: opts.configSource,
      settings: this.settings,
      backends: this.storedBackends,
    });
    this.users = new UsersRepo(this.store, this.secrets);
    this.ipAliases = new IpAliasesRepo(this.store);
    this.usersService = new UsersService({
      users: this.users,
      ipAliases: this.ipAliases,
      hasMasterKey: () => !!this.masterKey(),
    });
    this.authenticator = new Authenticator({ users: this.users, masterKey: () => this.masterKey() });
    const cfg = this.effective;
    this.callLog = openCallLog(cfg, this.log);
    this.paidGate = PaidGate.over(this.callLog, () => this.effective.paid_budget_usd_month);
    this.metrics = new GatewayMetrics({ defaultMetrics: opts.processMetrics !== false });
    this.callers = new Callers({
      authenticate: (headers) => this.authenticator.authenticate(headers),
      ipAliases: () => this.ipAliases.current(),
      admit: quotaAdmission(opts.cluster, this.callLog),
      paidBudget: (now) => this.paidGate.budgetRefusal(now),
      paidAllowed: (user) => this.paidGate.allows(user),
      isPaid: (backend) => this.registry.get(backend)?.spec.paid,
    });

    const clock = opts.clock ?? systemClock;
    this.registry = new BackendRegistry(() => clock.now());
    const alertWiring = { config: () => this.effective, registry: this.registry, paidGate: this.paidGate };
    this.alerts = new GatewayAlerts({ ...alertWiring, log: this.log, configSource: opts.configSource });
    // a card shared by an LLM server and a ComfyUI: opt-in unload / free when its work switches kind
    this.gpuSwitch = new GpuSwitch({
      groups: () => this.effective.gpu_groups,
      members: (group) => groupMembers(this.registry.list(), group),
      dispatcherFor: (name, url) => this.pools.get(name, url),
      log: this.log,
    });
    this.scheduler = schedulerFor(opts.cluster, {
      clock,
      maxParked: this.effective.max_parked,
      affinityMaxWaitMs: this.effective.affinity_max_wait_s * 1000,
      onGroupSwitch: this.gpuSwitch.onSwitch,
      fleet: { isResident: (b, m) => this.residency.isResident(b, m, Date.now()) },
    });
    this.configureGroups();
    this.catalog = new ModelCatalog(this.registry, () => this.effective);
    this.residency = new ResidencyTracker({
      residentOf: (name) => this.registry.get(name)?.spec.resident,
      ttlMs: () => 2 * this.effective.health_check_interval * 1000, // one missed probe is tolerated
    });
    this.registry.onChange((name) => {
      this.catalog.invalidate();
      const b = this.registry.get(name);
      if (b) this.scheduler.upsertBackend(slotSpec(b));
    });
    this.registry.onModelsChanged(() => this.refreshParkedSoon());
    this.registry.onRemoved((name) => {
      this.catalog.invalidate();
      this.scheduler.removeBackend(name);
      this.residency.forget(name);
      this.pools.retire(name);
      this.comfy.forget(name);
      this.comfyClients.forget(name);
    });
    this.discovery = new Discovery({
      registry: this.registry,
      dispatcherFor: (spec) => this.pools.get(spec.name, spec.url),
      settings: () => ({
        healthCheckIntervalS: this.effective.health_check_interval,
        fastProbeIntervalS: this.effective.fast_probe_interval_s,
      }),
      hasParked: () => this.scheduler.hasParked(),
      saveModels: (backend, models) => this.modelCache.save(backend, models),
      onError: (backend, error) => this.metrics.discoveryError(backend, error.kind),
      log: this.log,
      comfy: this.comfy,
      isGuess: (name) => this.inForce.isEmbeddedGuess(name),
      residency: { reader: new ResidencyReader(5000), tracker: this.residency },
    });
    this.waker = gatewayWaker(this.registry, this.discovery, this.scheduler, () => clock.now(), this.log);
    this.admission = new BackgroundAdmission(this.scheduler, () => ({
      maxParked: this.effective.max_parked,
      parkSeconds: this.effective.async_park_timeout_s,
    }));
    this.proxy = new UpstreamProxy({
      registry: this.registry,
      scheduler: this.admission.guard(this.scheduler),
      dispatcherFor: (b) => this.pools.get(b.name, b.spec.url),
      config: () => this.effective,
      now: () => clock.now(),
      onOutcome: (o) => this.recordOutcome(o),
      probe: (name) => void this.discovery.probe(name),
      log: this.log,
      refusals: refusalExplainer(this),
      onDispatch: (backend, model) => dispatchFacts(this.residency, this.scheduler, backend, model, Date.now()),
      affinity: new ConversationAffinity(),
      wake: this.waker,
    });
    this.tokenCounter = new TokenCounter({
      registry: this.registry,
      dispatcherFor: (b) => this.pools.get(b.name, b.spec.url),
      timeoutMs: () => Math.min(30, this.effective.request_timeout_s || 30) * 1000,
    });
    this.comfyClients = new ComfyClients({ dispatcherFor: (b) => this.pools.get(b.name, b.spec.url), log: this.log });
    this.generations = new GenerationCatalog({
      config: () => this.effective,
      objectInfo: (name) => this.comfy.objectInfo(name),
      loras: (name) => this.comfy.inventory(name)?.loras,
    });
    this.media = new MediaJobs({
      jobsDir: opts.fileConfig.jobs_dir,
      scheduler: this.scheduler,
      registry: this.registry,
      clients: this.comfyClients,
      catalog: this.generations,
      objectInfo: (name) => this.comfy.objectInfo(name),
      config: () => this.effective,
      recordOutcome: (o) => (this.recordOutcome(o), this.alerts.jobEnded(o)),
      probe: (name) => void this.discovery.probe(name),
      // a card switching from LLM to media work: the unload asked for goes first
      gpuSettled: (name) => {
        const group = this.registry.get(name)?.spec.gpu_group;
        return group ? this.gpuSwitch.pending(group) : Promise.resolve();
      },
      log: this.log,
      wake: this.waker,
    });
    this.applyBackends();
    const cached = this.modelCache.loadAll();
    for (const [name, models] of cached) this.registry.seedModels(name, models);
    this.health = gatewayHealthView(this, () => this.inForce.reloadProblems());
    this.admin = new ConfigService({
      fileConfig: () => this.inForce.fileConfig,
      effective: () => this.effective,
      settings: this.settings,
      backends: this.storedBackends,
      registry: this.registry,
      snapshot: () => this.scheduler.snapshot(),
      inventory: (name) => this.comfy.inventory(name),
      objectInfo: (name) => this.comfy.objectInfo(name),
      apply: () => this.applyStoreChange(),
      transaction: (fn) => this.store.transaction(fn)(),
    });
  }

  config(): GatewayConfig {
    return this.effective;
  }

  private get effective(): GatewayConfig {
    return this.inForce.effective;
  }

  /** The master key in force (the effective `api_key`: the store's setting wins); blank = none. */
  masterKey(): string | undefined {
    return effectiveMasterKey(this.effective.api_key);
  }

  /** A call's outcome: its call-log row, its quota use and its metrics (stats/call-recording.ts; no I/O). */
  recordOutcome(o: CallOutcome): void {
    recordCall(o, this, this.effective.capture_bodies);
    this.alerts.callEnded(o);
  }

  /** Model lists changed: parked calls re-resolve once per tick (however many backends changed). */
  private refreshParkedSoon(): void {
    if (this.refreshQueued) return;
    this.refreshQueued = true;
    queueMicrotask(() => {
      this.refreshQueued = false;
      this.scheduler.refreshCandidates();
    });
  }

  /** The Prometheus text of /metrics, with the gauges read off live state just now. */
  renderMetrics(): Promise<string> {
    return renderFleetMetrics(this.metrics, this.registry, this.scheduler);
  }

  private purgeTimer?: NodeJS.Timeout;

  start(): void {
    this.discovery.start();
    this.media.start();
    this.purgeTimer = setInterval(() => this.responses.purgeExpired(Date.now()), 10 * 60_000);
    this.purgeTimer.unref();
    this.alerts.started();
  }

  /** A new valid config file arrived: recompute, reconcile backends, re-arm timers. */
  reload(fileConfig: GatewayConfig): void {
    const needRestart = this.inForce.replaceFile(fileConfig);
    if (needRestart.length) this.log.warn(`changed keys take effect only after a restart: ${needRestart.join(', ')}`);
    this.applyEffective();
    this.applyLogLevel();
  }

  /** Loggers made before a reload that must follow `log_level` (logging.ts). */
  private readonly levelFollowers = new LogLevelFollowers();

  /** Keeps `logger`'s level equal to `log_level` across reloads. */
  followLogLevel(logger: { level: string }): void {
    this.levelFollowers.add(logger);
  }

  /** `log_level` is hot: applied to the process logger and its followers. */
  private applyLogLevel(): void {
    this.levelFollowers.apply(this.log, this.effective.log_level);
  }

  /** The store's settings or backends changed (console, admin API): recompute and apply live. */
  applyStoreChange(): void {
    this.applyEffective();
    this.applyLogLevel();
  }

  /** A config file that failed to load: the previous config stays in force; /health shows why. */
  rejectReload(problems: ConfigProblem[]): void {
    this.inForce.reject(problems);
  }

  /** Problems of the last rejected reload (empty once a reload succeeded). */
  get reloadProblems(): readonly ConfigProblem[] {
    return this.inForce.reloadProblems();
  }

  async close(): Promise<void> {
    clearInterval(this.purgeTimer);
    this.discovery.stop();
    this.registry.close();
    await Promise.all([this.alerts.close(), this.waker.close()]);
    await this.media.close();
    this.comfyClients.closeAll();
    await this.pools.closeAll();
    this.callLog.close();
    this.store.close();
  }

  private applyEffective(): void {
    const before = this.inForce.recompute();
    this.scheduler.configure({
      maxParked: this.effective.max_parked,
      affinityMaxWaitMs: this.effective.affinity_max_wait_s * 1000,
    });
    this.callLog.reconfigure(callLogSettings(this.effective));
    this.configureGroups();
    const change = this.applyBackends();
    this.catalog.invalidate();
    for (const name of [...change.added, ...change.changed]) void this.discovery.probe(name);
    // an alias edit or a new backend may give parked calls somewhere to go
    this.refreshParkedSoon();
    if (
      before.health_check_interval !== this.effective.health_check_interval ||
      before.fast_probe_interval_s !== this.effective.fast_probe_interval_s
    ) {
      this.discovery.reschedule();
    }
  }

  /** Slot caps of the GPU groups (every configured one and every one a backend names), then the backends. */
  private configureGroups(): void {
    this.scheduler.configureGroups(groupCaps(this.effective));
  }
  private applyBackends() {
    return this.registry.reconcile(this.effective.backends, this.effective.max_concurrent);
  }
}
