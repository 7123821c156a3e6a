/** The aliases tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function aliasesTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/aliases', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Aliases', tab: 'aliases' }));
}
