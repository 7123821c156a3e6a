import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';

/** Maps fastify's own errors (body parsing, limits, schemas) to stable gateway errors. */
export function toGatewayError(err: FastifyError | Error): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = err as FastifyError;
  const status = e.statusCode ?? 500;
  if (e.validation) {
    const first = e.validation[0];
    const field = (first?.instancePath || '').replace(/^\//, '').replace(/\//g, '.')
      || (first?.params as { missingProperty?: string } | undefined)?.missingProperty || null;
    return new GatewayError({ status: 400, code: 'invalid_request', param: field, message: `Invalid request body: ${field ? `\`${field}\` ` : ''}${first?.message ?? e.message}` });
  }
  if (e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || (status === 400 && /JSON/i.test(e.message))) {
    return new GatewayError({ status: 400, code: 'invalid_json', message: `We could not parse the JSON body of your request: ${e.message}` });
  }
  if (status === 413) {
    return new GatewayError({ status: 413, code: 'request_too_large', message: 'The request body is larger than this endpoint accepts.' });
  }
  if (status === 415) {
    return new GatewayError({ status: 415, code: 'unsupported_media_type', message: `Unsupported Content-Type; send application/json.` });
  }
  if (status >= 400 && status < 500) {
    return new GatewayError({ status, code: e.code ?? 'invalid_request', message: e.message });
  }
  return new GatewayError({ status: 500, code: 'internal_error', message: 'The gateway failed to handle the request; see its log.' });
}

/** Renders every error in the shape of the surface it happened on. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const gerr = toGatewayError(err);
    if (gerr.status >= 500 && !(err instanceof GatewayError)) req.log.error({ err }, 'unhandled error');
    if (reply.sent || reply.raw.headersSent) {
      if (!reply.raw.writableEnded) reply.raw.end();
      return;
    }
    sendError(reply, gerr, req.url);
  });
  app.setNotFoundHandler((req, reply) => {
    sendError(reply, new GatewayError({ status: 404, code: 'not_found', message: `Unknown route: ${req.method} ${req.url.split('?')[0]}` }), req.url);
  });
}

/** Writes `err` in the shape of the surface `url` belongs to, with Retry-After and x-request-id. */
export function sendError(reply: FastifyReply, err: GatewayError, url: string): void {
  if (err.retryAfter !== undefined) reply.header('retry-after', String(err.retryAfter));
  reply.header('x-request-id', reply.request.id);
  const anthropic = url.startsWith('/v1/messages');
  reply.code(err.status).send(anthropic ? err.toAnthropic() : err.toOpenAI());
}
