/** The playground tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function playgroundTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/playground', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Playground', tab: 'playground' }));
}
