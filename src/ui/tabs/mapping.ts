/** The mapping tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function mappingTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/mapping', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Mapping', tab: 'mapping' }));
}
