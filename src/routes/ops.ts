import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isLoopbackIp } from '../auth/loopback.ts';
import { GatewayError } from '../errors.ts';
import type { Gateway } from '../gateway.ts';
import { aliasCollisions } from '../routing/resolve.ts';

const OPEN_WARNING = 'OPEN: no master key and no users; anyone who can reach this port may use it. Set api_key or create an admin user.';

/**
 * Operational endpoints: /health. Anyone gets the summary a load balancer or uptime check
 * needs (status, counts); backends' hosts, errors and models, parked calls and reload errors
 * map the fleet, so only admins see them (the admin key; while open, loopback callers).
 */
export async function opsRoutes(app: FastifyInstance, opts: { gateway: Gateway }): Promise<void> {
  const { gateway } = opts;
  app.get('/health', async (req) => (isAdmin(gateway, req) ? fullHealth(gateway) : healthSummary(gateway)));
}

/** Whether the request may see admin-only detail; a missing or wrong key is just "no". */
function isAdmin(gateway: Gateway, req: FastifyRequest): boolean {
  try {
    gateway.authenticator.authenticateAdmin(req.headers, req.ip);
    return true;
  } catch (err) {
    if (err instanceof GatewayError) return false;
    throw err;
  }
}

function enabledCounts(gateway: Gateway) {
  const list = gateway.registry.list().filter((b) => b.spec.enabled);
  const healthy = list.filter((b) => b.healthy).length;
  return {
    status: healthy === list.length ? 'ok' : healthy > 0 ? 'degraded' : 'down',
    total: list.length,
    healthy,
  };
}

function authState(gateway: Gateway) {
  return gateway.authenticator.isOpen() ? { open: true, warning: OPEN_WARNING } : { open: false };
}

const uptime = (gateway: Gateway) => Math.round((Date.now() - gateway.startedAt) / 1000);

/** Status and counts only: nothing that names a host, a model or an error. */
function healthSummary(gateway: Gateway) {
  const counts = enabledCounts(gateway);
  const sched = gateway.scheduler.snapshot();
  return {
    status: counts.status,
    detail: 'summary; send an admin key for backends, models, parked calls and reload errors',
    auth: authState(gateway),
    uptime_s: uptime(gateway),
    backends: {
      total: counts.total,
      healthy: counts.healthy,
      inflight: sched.backends.reduce((sum, b) => sum + b.inflight, 0),
    },
    parked: { total: sched.parked.length },
  };
}

/** Everything an operator needs to see at a glance. */
function fullHealth(gateway: Gateway) {
  const cfg = gateway.config();
  const sched = gateway.scheduler.snapshot();
  const slots = new Map(sched.backends.map((b) => [b.name, b]));
  const backends = Object.fromEntries(gateway.registry.list().map((b) => {
    const s = slots.get(b.name);
    return [b.name, {
      type: b.spec.type,
      host: b.spec.host ?? null,
      enabled: b.spec.enabled,
      healthy: b.healthy,
      error: b.error ?? null,
      models: b.models.length,
      inflight: s?.inflight ?? 0,
      max_concurrent: b.cap,
      paid: b.spec.paid,
      speed: s?.speed ?? null,
      last_type_key: s?.lastTypeKey ?? null,
      discovered_at: b.discoveredAt ? new Date(b.discoveredAt).toISOString() : null,
    }];
  }));
  return {
    status: enabledCounts(gateway).status,
    detail: 'full',
    auth: authState(gateway),
    uptime_s: uptime(gateway),
    config: { source: gateway.configSource, reload_errors: gateway.reloadProblems },
    backends,
    parked: {
      total: sched.parked.length,
      by_alias: sched.parkedByAlias,
      waiters: sched.parked.map((w) => ({ alias: w.alias, age_s: w.ageMs / 1000, remaining_s: w.remainingMs / 1000 })),
    },
    alias_collisions: aliasCollisions(cfg.virtual_models, gateway.registry),
  };
}

/**
 * GET /metrics in Prometheus text; open on loopback by default, else the master/admin key.
 * Loopback is judged on req.ip, so behind a trusted proxy (trust_proxy) a remote client
 * needs the key even though the proxy connects from 127.0.0.1.
 */
export async function metricsRoute(app: FastifyInstance, opts: { gateway: Gateway }): Promise<void> {
  const { gateway } = opts;
  app.get('/metrics', async (req, reply) => {
    const access = gateway.config().metrics_access;
    const needsKey = access === 'key' || (access === 'loopback' && !isLoopbackIp(req.ip));
    if (needsKey) gateway.authenticator.authenticateAdmin(req.headers, req.ip);
    gateway.refreshGauges();
    reply.header('content-type', gateway.metrics.contentType);
    return gateway.metrics.render();
  });
}
