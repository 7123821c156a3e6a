/** The users tab (being built). */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';

export async function usersTab(app: FastifyInstance, _ctx: UiContext): Promise<void> {
  app.get('/ui/users', async (_req, reply) => renderPage(reply, 'placeholder', { title: 'Users', tab: 'users' }));
}
