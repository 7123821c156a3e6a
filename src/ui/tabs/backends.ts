/** The backends tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function backendsTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/backends', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Backends', tab: 'backends' }));
}
