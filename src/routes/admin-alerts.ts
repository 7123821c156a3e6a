/**
 * The alert targets for admins: `GET /admin/api/alerts` lists them (URLs masked) and
 * `POST /admin/api/alerts/test` sends a test alert, to target `{"index": i}` or, with no body,
 * to every target, answering each send's outcome (the console's "send test alert" does the same).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Alerts } from '../alerts/alerts.ts';
import { isObject } from '../json.ts';
import { badRequest, GatewayError } from '../errors.ts';

export interface AdminAlertsOptions {
  alerts: Pick<Alerts, 'targetsView' | 'test'>;
  requireAdmin: (req: FastifyRequest) => void;
}

export async function adminAlertsRoutes(app: FastifyInstance, opts: AdminAlertsOptions): Promise<void> {
  const { alerts } = opts;
  app.addHook('onRequest', async (req) => opts.requireAdmin(req));

  app.get('/admin/api/alerts', async () => ({ data: alerts.targetsView() }));

  app.post<{ Body: unknown }>('/admin/api/alerts/test', async (req) => {
    const body = req.body ?? {};
    if (!isObject(body)) throw badRequest('The body must be a JSON object: {"index": <target>} or none.');
    const unknown = Object.keys(body).find((k) => k !== 'index');
    if (unknown) throw badRequest(`Unknown field \`${unknown}\`: the body takes only \`index\`.`, unknown);
    const targets = alerts.targetsView();
    let indexes = targets.map((t) => t.index);
    if (body.index !== undefined) {
      const i = body.index;
      if (typeof i !== 'number' || !Number.isInteger(i) || i < 0)
        throw badRequest('`index` must be the index of an alert target (0, 1, …).', 'index');
      if (i >= targets.length) throw noTarget(`There is no alert target ${i} (${targets.length} configured).`);
      indexes = [i];
    }
    if (!indexes.length) throw noTarget('No alert targets are configured (`alerts` in config.yaml).');
    const results = await Promise.all(indexes.map((i) => alerts.test(i)));
    return { data: results.filter((r) => r !== undefined) };
  });
}

function noTarget(message: string): GatewayError {
  return new GatewayError({ status: 404, code: 'alert_target_not_found', param: 'index', message });
}
