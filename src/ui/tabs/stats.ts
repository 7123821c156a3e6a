/** The stats tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function statsTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/stats', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Stats', tab: 'stats' }));
}
