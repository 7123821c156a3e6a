import type { FastifyInstance } from 'fastify';
import type { Gateway } from '../gateway.ts';
import { aliasCollisions } from '../routing/resolve.ts';

/** Operational endpoints: /health (everything an operator needs to see at a glance). */
export async function opsRoutes(app: FastifyInstance, opts: { gateway: Gateway }): Promise<void> {
  const { gateway } = opts;
  app.get('/health', async () => {
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
    const list = gateway.registry.list().filter((b) => b.spec.enabled);
    const healthy = list.filter((b) => b.healthy).length;
    return {
      status: healthy === list.length ? 'ok' : healthy > 0 ? 'degraded' : 'down',
      auth: gateway.authenticator.isOpen()
        ? { open: true, warning: 'OPEN: no master key and no users; anyone who can reach this port may use it. Set api_key or create an admin user.' }
        : { open: false },
      uptime_s: Math.round((Date.now() - gateway.startedAt) / 1000),
      config: { source: gateway.configSource, reload_errors: gateway.reloadProblems },
      backends,
      parked: {
        total: sched.parked.length,
        by_alias: sched.parkedByAlias,
        waiters: sched.parked.map((w) => ({ alias: w.alias, age_s: w.ageMs / 1000, remaining_s: w.remainingMs / 1000 })),
      },
      alias_collisions: aliasCollisions(cfg.virtual_models, gateway.registry),
    };
  });
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

/** GET /metrics in Prometheus text; open on loopback by default, else the master/admin key. */
export async function metricsRoute(app: FastifyInstance, opts: { gateway: Gateway }): Promise<void> {
  const { gateway } = opts;
  app.get('/metrics', async (req, reply) => {
    const access = gateway.config().metrics_access;
    const needsKey = access === 'key' || (access === 'loopback' && !LOOPBACK.test(req.ip));
    if (needsKey) gateway.authenticator.authenticateAdmin(req.headers);
    gateway.refreshGauges();
    reply.header('content-type', gateway.metrics.contentType);
    return gateway.metrics.render();
  });
}
