/** The calls tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function callsTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/calls', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Calls', tab: 'calls' }));
}
