import cors from '@fastify/cors';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/types.ts';
import { formatProblems } from './config/schema.ts';
import { watchConfigFile, type ConfigWatcher } from './config/watch.ts';
import { Gateway } from './gateway.ts';
import { RequestIds } from './stats/request-ids.ts';
import { systemClock, type Clock } from './scheduler/index.ts';
import type { CallOutcome } from './stats/call-outcome.ts';
import { clientErrorHandler, installErrorHandlers, sendError, toGatewayError } from './routes/error-handler.ts';
import { openaiRoutes } from './routes/openai.ts';
import { audioRoutes } from './routes/audio.ts';
import { anthropicRoutes } from './routes/anthropic.ts';
import { ollamaRoutes } from './routes/ollama.ts';
import { OllamaShow } from './surfaces/ollama-show.ts';
import { responsesRoutes } from './routes/responses.ts';
import { BackgroundResponses } from './responses/background.ts';
import { InternalCalls, selfUrl } from './responses/internal-call.ts';
import { NativeReadBack } from './surfaces/responses-readback.ts';
import { RecentItems } from './responses/recent-items.ts';
import { switchRequest, TransformFactory } from './surfaces/call-transform.ts';
import { metricsRoute, opsRoutes } from './routes/ops.ts';
import { adminUsersRoutes } from './routes/admin-users.ts';
import { adminStatsRoutes } from './routes/admin-stats.ts';
import { adminAlertsRoutes } from './routes/admin-alerts.ts';
import { consoleRoutes } from './ui/plugin.ts';
import type { UiServices } from './ui/services.ts';
import { adminConfigRoutes } from './routes/admin-config.ts';
import { adminBackupRoutes } from './routes/admin-backup.ts';
import { backupServiceOf } from './gateway-backup.ts';
import { GatewayLock } from './store/backup/lock.ts';
import { ClusterNode } from './cluster/node.ts';
import { attachCluster } from './cluster/attach.ts';
import { attachClusterStore } from './cluster/attach-store.ts';
import { mediaCaller, type MediaRouteDeps } from './routes/media-caller.ts';
import { mediaImagesRoutes } from './routes/media-images.ts';
import { mediaNativeRoutes } from './routes/media-native.ts';
import { mediaJobsRoutes } from './routes/media-jobs.ts';
import { addressedToThisMachine, originAllowed } from './auth/open-guard.ts';
import { OwnHost } from './auth/own-host.ts';
import { requestGuards } from './routes/request-guards.ts';
import { decodeRequestBody } from './routes/content-encoding.ts';
import { armReceiveTimeout, REQUEST_RECEIVE_LIMIT_MS } from './routes/receive-timeout.ts';

export interface AppOptions {
  config: GatewayConfig;
  configSource: string;
  logger: Logger;
  clock?: Clock;
  /** Process metrics (GC, event loop) on /metrics; tests building many apps turn them off. */
  processMetrics?: boolean;
  /** Start discovery right away (tests that seed the registry themselves may turn it off). */
  startDiscovery?: boolean;
  /** Watch this config file and hot-reload it (absent: no watching). */
  watchConfigPath?: string;
  /** This machine's names and addresses (tests pass their own). */
  ownHost?: OwnHost;
}

export interface App {
  app: FastifyInstance;
  gateway: Gateway;
}

/**
 * Builds one gateway app: the core (Gateway) and the HTTP surface, plugins registered
 * explicitly in tiers. Closing the fastify instance closes the gateway.
 */
export async function buildApp(opts: AppOptions): Promise<App> {
  // <store_dir>/gateway.lock before anything opens: held while the app runs (a restore refuses meanwhile)
  const lock = GatewayLock.acquire(opts.config.store_dir);
  // several gateways as one (`cluster`): Redis must answer before anything starts
  const cluster = opts.config.cluster && (await lock.guardAsync(() => ClusterNode.connect(opts.config.cluster!)));
  const gateway = lock.guard(() => {
    try {
      return new Gateway({
        fileConfig: opts.config,
        configSource: opts.configSource,
        logger: opts.logger,
        clock: opts.clock,
        processMetrics: opts.processMetrics,
        cluster: cluster || undefined,
      });
    } catch (err) {
      if (cluster) void cluster.close();
      throw err;
    }
  });
  const storeSync = await lock.guardAsync(() => attachClusterStore(gateway, opts.logger)); // cluster: one store
  // a client's own x-request-id, unless it is in recent use: one row per call (stats/request-ids.ts)
  const requestIds = new RequestIds((id) => gateway.callLog.hasRecord(id));
  const app: FastifyInstance = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    // no per-request info log on the hot path
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 1024 * 1024,
    requestIdHeader: false,
    genReqId: (req) => requestIds.next(req.headers['x-request-id']),
    forceCloseConnections: 'idle',
    // a request must have arrived whole within this (stalls: request_body_timeout_s, receive-timeout.ts)
    requestTimeout: REQUEST_RECEIVE_LIMIT_MS,
    return503OnClosing: true,
    // req.ip is the client behind these proxies (loopback rules, attribution); restart-only
    // a bare hop count is refused by the schema: fastify 5 would trust no proxy with it
    trustProxy: opts.config.trust_proxy,
    // clients and reverse proxies that build URLs by concatenation: /v1/models/, /v1//models
    // (the proxy forwards the matched route's own path, so backends never see the odd form)
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
    // errors fastify raises before routing (a malformed URL escape, …) get the same shape
    frameworkErrors: (err, req, reply) => sendError(reply as FastifyReply, toGatewayError(err), req.url),
    // … and so do the ones Node's HTTP parser raises before fastify sees a request (431, …)
    clientErrorHandler,
  });
  const internal = new InternalCalls();
  const background = new BackgroundResponses({
    repo: gateway.responses,
    now: () => Date.now(),
    selfUrl: () => selfUrl(app.server.address()),
    internalHeaders: (id, createdAt) => internal.headers(id, createdAt),
    log: opts.logger,
  });
  app.addHook('onClose', async () => {
    await storeSync?.close();
    background.close();
    await gateway.close();
    await gateway.cluster?.close();
    lock.release();
  });
  // several instances as one: shared health, jobs and statistics reachable from any (cluster/attach.ts)
  const clustered = gateway.cluster && (await attachCluster(app, gateway, gateway.cluster));
  // fastify logs through a child of opts.logger, made just now: reloads must reach it too
  gateway.followLogLevel(app.log);
  if (opts.watchConfigPath) {
    const watcher = watchGatewayConfig(gateway, opts.watchConfigPath, opts.logger);
    app.addHook('onClose', async () => watcher.close());
  }

  // tier 1: cross-cutting
  installErrorHandlers(app);
  const receiveIdleMs = () => gateway.config().request_body_timeout_s * 1000;
  armReceiveTimeout(app.server, receiveIdleMs);
  const own = opts.ownHost ?? new OwnHost();
  app.addHook(
    'onRequest',
    requestGuards({
      isOpen: () => gateway.authenticator.isOpen(),
      own,
      settings: () => {
        const cfg = gateway.config();
        return { allowedHosts: cfg.allowed_hosts, corsOrigins: cfg.cors_origins, receiveIdleMs: receiveIdleMs() };
      },
      authenticate: (headers) => gateway.authenticator.authenticate(headers),
      anonymous: (req) => gateway.callers.anonymous(req),
      recordOutcome: (outcome) => gateway.recordOutcome(outcome),
    }),
  );
  // gzip/deflate/br bodies decoded (the decoded size within the route's limit), others 415
  app.addHook('preParsing', decodeRequestBody);
  await registerCors(app, gateway);
  // fastify parses text/plain as a string by default; the API takes JSON only, and refusing
  // text/plain (415) also refuses the one body type a web page may POST to a loopback gateway
  // without a CORS preflight
  app.removeContentTypeParser('text/plain');
  // tier 2: API surfaces
  const requireAdmin = (req: FastifyRequest) => {
    gateway.authenticator.authenticateAdmin(req.headers, req.ip);
  };
  const transforms = new TransformFactory(() => gateway.config());
  const proxied = {
    callers: gateway.callers,
    catalog: gateway.catalog,
    proxy: gateway.proxy,
    recordOutcome: (outcome: CallOutcome) => gateway.recordOutcome(outcome),
    transforms,
  };
  await app.register(openaiRoutes, {
    ...proxied,
    imageModels: (req, ctx) =>
      gateway.media.aliases(mediaCaller(ctx, req.ip)).map((a) => ({
        id: a.id,
        object: 'model' as const,
        created: 0,
        owned_by: 'llm-gateway',
        type: 'image' as const,
        backends: a.backends,
      })),
  });
  await app.register(audioRoutes, { ...proxied, config: () => gateway.config() });
  await app.register(anthropicRoutes, {
    ...proxied,
    backendType: (name) => gateway.registry.get(name)?.spec.type,
    routable: (candidates) => gateway.scheduler.order([...candidates]),
    countTokens: (call, candidates, req) => gateway.tokenCounter.count(call, candidates, req.headers),
  });
  const ollamaShow = new OllamaShow({
    registry: gateway.registry,
    dispatcherFor: (b) => gateway.pools.get(b.name, b.spec.url),
    timeoutMs: () => gateway.config().first_byte_timeout_s * 1000,
  });
  await app.register(ollamaRoutes, {
    ...proxied,
    // the proxy's clock: the `*_duration` statistics subtract the route's times from the relay's
    now: () => (opts.clock ?? systemClock).now(),
    backendType: (name) => gateway.registry.get(name)?.spec.type,
    facts: {
      contextLength: (backend, model) => gateway.registry.get(backend)?.modelsById.get(model)?.context_length,
      isResident: (backend, model) => gateway.residency.isResident(backend, model, Date.now()),
    },
    nativeShow: (backend, model, verbose) => ollamaShow.show(backend, model, verbose),
  });
  await app.register(responsesRoutes, {
    ...proxied,
    repo: gateway.responses,
    background,
    internalCall: (req) => internal.read(req),
    settings: () => ({
      asyncParkS: gateway.config().async_park_timeout_s,
      ttlMs: gateway.config().responses_ttl_h * 3_600_000,
    }),
    transformFor: (_ctx, body, alias) =>
      transforms.forCall('chat', alias, Object.assign(switchRequest(body, 'responses'), { stripGatewayField: false })),
    isNative: (name) => gateway.registry.get(name)?.spec.responses === 'native',
    recentItems: new RecentItems({ maxItems: 20_000, maxAgeMs: 60 * 60_000, now: () => Date.now() }),
    admission: gateway.admission,
    readBack: new NativeReadBack({
      registry: gateway.registry,
      dispatcherFor: (b) => gateway.pools.get(b.name, b.spec.url),
      headMs: () => gateway.config().first_byte_timeout_s * 1000,
      idleMs: () => gateway.config().stream_idle_timeout_s * 1000,
    }),
    now: () => Date.now(),
  });
  const media: MediaRouteDeps = {
    callers: gateway.callers,
    media: () => gateway.media,
    recordOutcome: (outcome: CallOutcome) => gateway.recordOutcome(outcome),
    config: () => gateway.config(),
  };
  await app.register(mediaImagesRoutes, media);
  await app.register(mediaNativeRoutes, media);
  await app.register(mediaJobsRoutes, media);
  await app.register(opsRoutes, { health: gateway.health, requireAdmin });
  await app.register(metricsRoute, {
    render: () => gateway.renderMetrics(),
    contentType: gateway.metrics.contentType,
    access: () => gateway.config().metrics_access,
    requireAdmin,
    // same host: a loopback or own address, addressed by one of this machine's names
    isLocal: (req) =>
      own.isOwnAddress(req.ip) && addressedToThisMachine(req.headers, own, gateway.config().allowed_hosts),
  });
  // tier 3: administration (admin role or master key; open only while bootstrap-open)
  await app.register(adminUsersRoutes, { service: gateway.usersService, requireAdmin });
  const paidBudget = () => gateway.paidGate.status();
  await app.register(adminStatsRoutes, { callLog: gateway.callLog, paidBudget, requireAdmin });
  await app.register(adminAlertsRoutes, { alerts: gateway.alerts, requireAdmin });
  // tier 4: the /ui console (its own cookies, forms and templates, encapsulated)
  const services = { ...uiServicesOf(gateway), cluster: clustered?.stats };
  await app.register(consoleRoutes, { services, cluster: gateway.cluster });
  await app.register(adminConfigRoutes, { config: gateway.admin, requireAdmin });
  await app.register(adminBackupRoutes, { backups: backupServiceOf(gateway), requireAdmin });

  if (gateway.authenticator.isOpen()) {
    opts.logger.warn(
      'the gateway is OPEN: no master key and no users, so anyone who can reach it may use its ' +
        'models (its admin API answers loopback callers only). Set api_key in the config or create ' +
        'an admin user to lock it.',
    );
  }

  if (opts.startDiscovery !== false) gateway.start();
  return { app, gateway };
}

/** The few services the console works through, off the gateway (ui/services.ts says which and why). */
export function uiServicesOf(gateway: Gateway): UiServices {
  return {
    config: () => gateway.config(),
    configSource: gateway.configSource,
    reloadProblems: () => gateway.reloadProblems,
    authenticator: gateway.authenticator,
    masterKey: () => gateway.masterKey(),
    users: gateway.usersService,
    admin: gateway.admin,
    callLog: gateway.callLog,
    quotas: gateway.callLog.quotas,
    registry: gateway.registry,
    slots: () => gateway.scheduler.snapshot(),
    catalog: gateway.catalog,
    generations: gateway.generations,
    media: gateway.media,
    comfy: gateway.comfy,
    alerts: gateway.alerts,
    wake: gateway.waker,
  };
}

/** Hot reload: a valid file replaces the config; an invalid one is logged and shown in /health. */
function watchGatewayConfig(gateway: Gateway, path: string, log: Logger): ConfigWatcher {
  return watchConfigFile(path, (result) => {
    if (result.ok) {
      gateway.reload(result.config);
      log.info(`reloaded config ${path}`);
    } else {
      gateway.rejectReload(result.problems);
      log.error(
        `config reload rejected, the previous configuration stays in force:\n${formatProblems(result.problems)}`,
      );
    }
  });
}

/** Response headers a browser page may read: who answered and why, the id to quote, when to retry. */
const CORS_EXPOSED = ['x-request-id', 'x-gateway-backend', 'x-gateway-route', 'x-reasoning-control', 'retry-after'];

/**
 * CORS for browser clients, off while `cors_origins` is [] and hot (the origin check reads the
 * live config). Preflights are answered in an onRequest hook, before any key is asked for
 * (browsers never send one on a preflight). Requested headers are echoed back rather than
 * listed: the OpenAI and Anthropic SDKs send their own (x-stainless-*, anthropic-version) on
 * top of authorization, content-type, x-api-key and x-source.
 */
async function registerCors(app: FastifyInstance, gateway: Gateway): Promise<void> {
  await app.register(cors, {
    origin: (origin, cb) =>
      cb(null, origin !== undefined && originAllowed(origin, gateway.config().cors_origins) ? origin : false),
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposedHeaders: CORS_EXPOSED,
    maxAge: 600,
  });
}

export { originAllowed };
