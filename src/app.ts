import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/types.ts';
import { formatProblems } from './config/schema.ts';
import { watchConfigFile, type ConfigWatcher } from './config/watch.ts';
import { Gateway } from './gateway.ts';
import type { Clock } from './scheduler/index.ts';
import { installErrorHandlers, sendError, toGatewayError } from './routes/error-handler.ts';
import { openaiRoutes } from './routes/openai.ts';
import { metricsRoute, opsRoutes } from './routes/ops.ts';
import { adminUsersRoutes } from './routes/admin-users.ts';
import { adminStatsRoutes } from './routes/admin-stats.ts';

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
}

export interface App {
  app: FastifyInstance;
  gateway: Gateway;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Builds one gateway app: the core (Gateway) and the HTTP surface, plugins registered
 * explicitly in tiers. Closing the fastify instance closes the gateway.
 */
export async function buildApp(opts: AppOptions): Promise<App> {
  const gateway = new Gateway({
    fileConfig: opts.config, configSource: opts.configSource, logger: opts.logger, clock: opts.clock,
    processMetrics: opts.processMetrics,
  });
  const app: FastifyInstance = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    // no per-request info log on the hot path
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 1024 * 1024,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    // errors fastify raises before routing (a malformed URL escape, …) get the same shape
    frameworkErrors: (err, req, reply) => sendError(reply as FastifyReply, toGatewayError(err), req.url),
  });
  app.addHook('onClose', async () => gateway.close());
  if (opts.watchConfigPath) {
    const watcher = watchGatewayConfig(gateway, opts.watchConfigPath, opts.logger);
    app.addHook('onClose', async () => watcher.close());
  }

  // tier 1: cross-cutting
  installErrorHandlers(app);
  // tier 2: API surfaces
  await app.register(openaiRoutes, { gateway });
  await app.register(opsRoutes, { gateway });
  await app.register(metricsRoute, { gateway });
  // tier 3: administration (admin role or master key; open only while bootstrap-open)
  const requireAdmin = (req: FastifyRequest) => {
    gateway.authenticator.authenticateAdmin(req.headers);
  };
  await app.register(adminUsersRoutes, {
    users: gateway.users, ipAliases: gateway.ipAliases, requireAdmin, hasMasterKey: () => !!gateway.masterKey(),
  });
  await app.register(adminStatsRoutes, { callLog: gateway.callLog, requireAdmin });

  if (gateway.authenticator.isOpen()) {
    opts.logger.warn('the gateway is OPEN: no master key and no users, so anyone who can reach it may use it (and its admin API). Set api_key in the config or create an admin user to lock it.');
  }

  if (opts.startDiscovery !== false) gateway.start();
  return { app, gateway };
}

/** Hot reload: a valid file replaces the config; an invalid one is logged and shown in /health. */
function watchGatewayConfig(gateway: Gateway, path: string, log: Logger): ConfigWatcher {
  return watchConfigFile(path, (result) => {
    if (result.ok) {
      gateway.reload(result.config);
      log.info(`reloaded config ${path}`);
    } else {
      gateway.rejectReload(result.problems);
      log.error(`config reload rejected, the previous configuration stays in force:\n${formatProblems(result.problems)}`);
    }
  });
}
