/**
 * The few services the console works through, and only the methods of each it calls: never
 * the gateway itself, never a repository. app.ts builds it from the gateway (`uiServicesOf`);
 * a test may build it from fakes. Every change a tab makes goes through the same service as
 * the JSON admin API's (`admin`, `users`).
 */
import type { Alerts } from '../alerts/alerts.ts';
import type { Authenticator } from '../auth/authenticator.ts';
import type { BackendRegistry } from '../backends/registry.ts';
import type { ConfigProblem } from '../config/load.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { ConfigService } from '../admin/config-service.ts';
import type { UsersService } from '../admin/users-service.ts';
import type { ComfyHealth } from '../media/comfy/health.ts';
import type { GenerationCatalog } from '../media/generation-catalog.ts';
import type { MediaService } from '../media/service-types.ts';
import type { ModelCatalog } from '../routing/catalog.ts';
import type { SchedulerSnapshot } from '../scheduler/index.ts';
import type { CallLog } from '../stats/call-log.ts';
import type { QuotaGate } from '../stats/quota.ts';
import type { Waker } from '../backends/wake/waker.ts';
import type { ClusterStatsView } from '../cluster/stats-sum.ts';

export interface UiServices {
  /** The effective configuration (config.yaml ⊕ store) in force now. */
  config(): GatewayConfig;
  /** Where the config file came from ('embedded default' when none). */
  readonly configSource: string;
  /** Problems of the last rejected config reload (empty once a reload succeeded). */
  reloadProblems(): readonly ConfigProblem[];
  /** Whether the gateway is bootstrap-open, and whose key a login presents. */
  readonly authenticator: Pick<Authenticator, 'isOpen' | 'authenticate'>;
  /** The master key in force (the store's `api_key` wins); undefined = none. */
  masterKey(): string | undefined;
  /** Users, their keys and IP aliases: the admin API's own instance. */
  readonly users: UiUsers;
  /** Settings and backends: the admin API's own instance. */
  readonly admin: UiConfigAdmin;
  /** The call log's reads. */
  readonly callLog: Pick<CallLog, 'recent' | 'get' | 'bodies' | 'summary'>;
  /** Each user's use of its quotas so far. */
  readonly quotas: Pick<QuotaGate, 'requestsSince' | 'costSince' | 'inflight'>;
  /** The backends' live state. */
  readonly registry: Pick<BackendRegistry, 'list' | 'get' | 'backendsServing'>;
  /** The scheduler's slots and parked tickets, now. */
  slots(): SchedulerSnapshot;
  /** How a requested model resolves, with alias collisions and glob patterns. */
  readonly catalog: Pick<ModelCatalog, 'resolve' | 'collisions' | 'patterns'>;
  /** Generation aliases (`image_models`) and their candidates. */
  readonly generations: Pick<GenerationCatalog, 'names' | 'get' | 'problems'>;
  /** Media jobs, read (and cancelled) as the console. */
  readonly media: Pick<MediaService, 'list' | 'view' | 'subscribe' | 'cancel' | 'result' | 'input' | 'preview'>;
  /** What each ComfyUI box has installed (its object_info and inventory). */
  readonly comfy: Pick<ComfyHealth, 'objectInfo' | 'inventory'>;
  /** The alert targets (masked) and their test send. */
  readonly alerts: Pick<Alerts, 'targetsView' | 'test'>;
  /** Wake-on-LAN state of backends with `wake` (null without); absent = none shown. */
  readonly wake?: Pick<Waker, 'stateOf'>;
  /** Cluster mode: this instance's name and the Statistics tab's sum over every instance; absent = one gateway. */
  readonly cluster?: ClusterStatsView;
}

export type UiUsers = Pick<
  UsersService,
  | 'list'
  | 'get'
  | 'create'
  | 'update'
  | 'delete'
  | 'rotate'
  | 'checkCreate'
  | 'checkPatch'
  | 'checkRotate'
  | 'firstMustBeAdmin'
  | 'ipAliases'
  | 'setIpAlias'
  | 'removeIpAlias'
  | 'digestOf'
  | 'currentHolder'
>;

export type UiConfigAdmin = Pick<
  ConfigService,
  | 'settingsView'
  | 'settingView'
  | 'setSetting'
  | 'setSettings'
  | 'resetSetting'
  | 'checkImageAlias'
  | 'backendsView'
  | 'backendView'
  | 'saveBackend'
  | 'checkBackend'
  | 'testBackend'
  | 'removeBackend'
  | 'resetBackend'
  | 'drainBackend'
>;
