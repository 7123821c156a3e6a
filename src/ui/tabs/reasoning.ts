/** The reasoning tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function reasoningTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/reasoning', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Reasoning', tab: 'reasoning' }));
}
