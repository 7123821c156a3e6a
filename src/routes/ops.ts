import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isLoopbackIp } from '../auth/loopback.ts';
import type { GatewayConfig } from '../config/types.ts';
import { GatewayError } from '../errors.ts';
import { fullHealth, healthSummary, type HealthView } from './health.ts';
import { deepHealth } from './health-deep.ts';
import { readiness } from './readiness.ts';

export interface OpsRoutesOptions {
  health: HealthView;
  /** Throws GatewayError 401/403 unless the request comes from an admin (or the gateway is open). */
  requireAdmin: (req: FastifyRequest) => void;
}

/**
 * Operational endpoints: /health. Anyone gets the summary a load balancer or uptime check
 * needs (status, counts); backends' hosts, errors and models, parked calls and reload errors
 * map the fleet, so only admins see them (the admin key; while open, loopback callers).
 * /health/ready answers anyone 200 or 503 with its reasons (named without paths or hosts);
 * /health/deep is admin-only.
 */
export async function opsRoutes(app: FastifyInstance, opts: OpsRoutesOptions): Promise<void> {
  const isAdmin = (req: FastifyRequest): boolean => {
    try {
      opts.requireAdmin(req);
      return true;
    } catch (err) {
      if (err instanceof GatewayError) return false; // a missing or wrong key is just "no"
      throw err;
    }
  };
  app.get('/health', async (req) => (isAdmin(req) ? fullHealth(opts.health) : healthSummary(opts.health)));
  app.get('/health/ready', async (_req, reply) => {
    const verdict = readiness(opts.health.readiness());
    reply.header('cache-control', 'no-store').code(verdict.ready ? 200 : 503);
    return { status: verdict.ready ? 'ready' : 'not_ready', reasons: verdict.reasons, checks: verdict.checks };
  });
  app.get('/health/deep', async (req, reply) => {
    opts.requireAdmin(req);
    reply.header('cache-control', 'no-store');
    return deepHealth(opts.health);
  });
}

export interface MetricsRouteOptions {
  /** Refreshes the gauges read off live state, then renders the Prometheus text. */
  render: () => Promise<string>;
  contentType: string;
  access: () => GatewayConfig['metrics_access'];
  requireAdmin: (req: FastifyRequest) => void;
  /** A request from this host addressed to it (default: a loopback client address). */
  isLocal?: (req: FastifyRequest) => boolean;
}

/**
 * GET /metrics in Prometheus text; open on loopback by default, else the master/admin key.
 * Loopback is judged on req.ip, so behind a trusted proxy (trust_proxy) a remote client
 * needs the key even though the proxy connects from 127.0.0.1, and on the Host header: a page
 * re-pointing its own name at 127.0.0.1 (DNS rebinding) needs the key too.
 */
export async function metricsRoute(app: FastifyInstance, opts: MetricsRouteOptions): Promise<void> {
  app.get('/metrics', async (req, reply) => {
    const access = opts.access();
    const local = opts.isLocal ? opts.isLocal(req) : isLoopbackIp(req.ip);
    if (access === 'key' || (access === 'loopback' && !local)) opts.requireAdmin(req);
    reply.header('content-type', opts.contentType);
    return opts.render();
  });
}
