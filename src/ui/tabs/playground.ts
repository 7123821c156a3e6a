/**
 * The Playground: Chat, Media and Voice panels that are real API clients running in the
 * browser (public/playground.js calls /v1 with the key the user types), so auth, routing,
 * parking, the licence boundary and the call log apply as for any client. The server renders
 * the page (with each generation alias's parameters and file slots) and answers one lookup:
 * a call's cost from the call log, by its request id. The key never reaches a console route.
 */
import type { FastifyInstance } from 'fastify';
import type { UiContext } from '../context.ts';
import { callSummary, playgroundAliases, validRequestId } from '../playground-model.ts';
import { renderPage } from '../render.ts';

const PANELS = ['chat', 'media', 'voice'] as const;

export async function playgroundTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  app.get('/ui/playground', async (_req, reply) =>
    renderPage(reply, 'playground', {
      title: 'Playground',
      tab: 'playground',
      panels: PANELS,
      open: ctx.services.authenticator.isOpen(),
      aliases: playgroundAliases(ctx.services),
    }),
  );

  // JSON for playground.js: the call-log row of a call it just made (tokens, cost)
  app.get('/ui/playground/call', async (req, reply) => {
    const q = req.query as Record<string, unknown>;
    if (!validRequestId(q.request_id)) {
      return reply.code(400).send({
        error: {
          message: 'request_id must be a request id.',
          type: 'invalid_request_error',
          param: 'request_id',
          code: 'invalid_request_id',
        },
      });
    }
    const since = typeof q.since === 'string' && /^\d{1,15}$/.test(q.since) ? Number(q.since) : undefined;
    return callSummary(ctx.services, q.request_id, since);
  });
}
