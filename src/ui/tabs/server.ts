/** The server tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function serverTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/server', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Server', tab: 'server' }));
}
