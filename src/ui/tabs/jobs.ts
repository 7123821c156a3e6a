/** The jobs tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function jobsTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/jobs', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Jobs', tab: 'jobs' }));
}
