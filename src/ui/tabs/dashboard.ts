/**
 * The dashboard: every backend, the queue, running media jobs and the last calls, kept live
 * by one server-sent event stream (`/ui/events`, src/ui/part-stream.ts): each second the parts
 * that changed are sent as rendered HTML fragments (`event: part`), so a second screen never
 * reloads; the stream ends when the viewer's session does.
 */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { dashboardModel, type DashboardModel } from '../dashboard-model.ts';
import { renderPartial } from '../partials.ts';
import { partStream } from '../part-stream.ts';
import { renderPage } from '../render.ts';

/** The parts of the dashboard, each a partial of views/partials/. */
export const DASHBOARD_PARTS = [
  'dashboard-counts',
  'dashboard-backends',
  'dashboard-queue',
  'dashboard-jobs',
  'dashboard-calls',
] as const;

/** Streams open at once; one more is refused (each costs a render per second). */
const MAX_STREAMS = 32;

export async function dashboardTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  app.get('/ui', async (_req, reply) => {
    const model = dashboardModel(ctx.services);
    return renderPage(reply, 'dashboard', { title: 'Dashboard', tab: 'dashboard', parts: renderParts(model) });
  });

  partStream(app, ctx, {
    path: '/ui/events',
    max: MAX_STREAMS,
    label: 'dashboard',
    parts: () => renderParts(dashboardModel(ctx.services)),
  });
}

function renderParts(model: DashboardModel): Record<string, string> {
  return Object.fromEntries(DASHBOARD_PARTS.map((name) => [name, renderPartial(name, { m: model })]));
}
