import type { FastifyInstance } from 'fastify';
import { badRequest, invalidJson } from '../errors.ts';
import { MAX_JSON_DEPTH, nestingDepthExceeds } from '../wire/raw-json.ts';
import { bodyShapeProblem } from './body-shape.ts';

/** Deeper nesting than this is refused at parse time (no chat body needs it; deep values make JSON tools throw). */

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body exactly as the client sent it ('' for other bodies). */
    rawBody: string;
  }
}

/**
 * The JSON body parser of the proxied routes (scoped to the plugin that calls it): keeps the
 * client's text next to the parsed object, so the body reaches the backend byte for byte but
 * for the fields the gateway sets, and refuses nesting beyond MAX_JSON_DEPTH with a 400, as
 * well as a `stream`, `stream_options` or `messages` of the wrong type (body-shape.ts).
 */
export function useRawJsonBodies(app: FastifyInstance, bodyLimit: number, alsoAs: readonly string[] = []): void {
  app.decorateRequest('rawBody', '');
  app.removeContentTypeParser('application/json');
  // `alsoAs`: content types read as JSON all the same (Ollama's API, where `curl -d` sends a form type)
  app.addContentTypeParser(['application/json', ...alsoAs], { parseAs: 'string', bodyLimit }, (req, text, done) => {
    const body = text as string;
    if (nestingDepthExceeds(body, MAX_JSON_DEPTH)) {
      done(badRequest(`The JSON body nests deeper than ${MAX_JSON_DEPTH} levels.`, null, 'json_too_deep'), undefined);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch (err) {
      done(invalidJson((err as Error).message), undefined);
      return;
    }
    const problem = bodyShapeProblem(parsed);
    if (problem) {
      done(problem, undefined);
      return;
    }
    req.rawBody = body;
    done(null, parsed);
  });
}
