/**
 * The dashboard: every backend, the queue, running media jobs and the last calls, kept live
 * by one server-sent event stream (`/ui/events`): each second the parts that changed are sent
 * as rendered HTML fragments (`event: part`), so a second screen never reloads.
 */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { dashboardModel, type DashboardModel } from '../dashboard-model.ts';
import { renderPartial } from '../partials.ts';
import { renderPage } from '../render.ts';

/** The parts of the dashboard, each a partial of views/partials/. */
export const DASHBOARD_PARTS = ['dashboard-counts', 'dashboard-backends', 'dashboard-queue', 'dashboard-jobs', 'dashboard-calls'] as const;

const TICK_MS = 1_000;
const KEEPALIVE_MS = 15_000;
/** Streams open at once; one more is refused (each costs a render per second). */
const MAX_STREAMS = 32;

export async function dashboardTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  let open = 0;
  const streams = new Set<import('node:http').ServerResponse>();
  // endless streams would keep the server from closing
  app.addHook('preClose', async () => { for (const res of streams) res.destroy(); });

  app.get('/ui', async (_req, reply) => {
    const model = dashboardModel(ctx.gateway);
    return renderPage(reply, 'dashboard', { title: 'Dashboard', tab: 'dashboard', parts: renderParts(model) });
  });

  app.get('/ui/events', async (req, reply) => {
    if (open >= MAX_STREAMS) return reply.code(503).send({ error: { message: 'too many console streams open', type: 'api_error', param: null, code: 'too_many_streams' } });
    open++;
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', connection: 'keep-alive' });
    streams.add(res);
    const last = new Map<string, string>();
    let idle = 0;
    const send = () => {
      if (res.writableNeedDrain) return; // a slow reader skips ticks rather than buffering
      const parts = renderParts(dashboardModel(ctx.gateway));
      let wrote = false;
      for (const [name, html] of Object.entries(parts)) {
        if (last.get(name) === html) continue;
        last.set(name, html);
        res.write(`event: part\ndata: ${JSON.stringify({ name, html })}\n\n`);
        wrote = true;
      }
      idle = wrote ? 0 : idle + TICK_MS;
      if (idle >= KEEPALIVE_MS) { res.write(': keep-alive\n\n'); idle = 0; }
    };
    send();
    const timer = setInterval(() => {
      try {
        send();
      } catch (err) {
        req.log.error({ err }, 'console event stream failed');
        res.destroy();
      }
    }, TICK_MS);
    const stop = () => { clearInterval(timer); open--; streams.delete(res); };
    res.once('close', stop);
  });
}

function renderParts(model: DashboardModel): Record<string, string> {
  return Object.fromEntries(DASHBOARD_PARTS.map((name) => [name, renderPartial(name, { m: model })]));
}
