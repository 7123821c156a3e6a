import { maxHeaderSize, STATUS_CODES, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, invalidJson } from '../errors.ts';
import { wantsAnthropicErrors } from './anthropic-models.ts';
import { schemaError } from './schema-errors.ts';

/**
 * Maps every error a route can end with to a stable gateway error: its own GatewayErrors,
 * fastify's (body parsing, limits, schema validation, naming the field) and anything
 * unexpected (a 500 that says to look at the log, never the exception's text).
 */
export function toGatewayError(err: FastifyError | Error): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = err as FastifyError;
  const status = e.statusCode ?? 500;
  if (e.validation?.length) return schemaError(e.validation[0]);
  if (
    e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
    e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
    err instanceof SyntaxError
  ) {
    return invalidJson(e.message);
  }
  if (status === 413) {
    return new GatewayError({
      status: 413,
      code: 'request_too_large',
      message: 'The request body is larger than this endpoint accepts.',
    });
  }
  if (status === 415) {
    return new GatewayError({
      status: 415,
      code: 'unsupported_media_type',
      message: `Unsupported Content-Type; send application/json.`,
    });
  }
  if (status >= 400 && status < 500) {
    return new GatewayError({ status, code: e.code ?? 'invalid_request', message: e.message });
  }
  return new GatewayError({
    status: 500,
    code: 'internal_error',
    message: 'The gateway failed to handle the request; see its log.',
  });
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
    sendError(
      reply,
      new GatewayError({
        status: 404,
        code: 'not_found',
        message: `Unknown route: ${req.method} ${req.url.split('?')[0]}`,
      }),
      req.url,
    );
  });
}

/** Writes `err` in the shape of the surface `url` belongs to, with Retry-After and x-request-id. */
export function sendError(reply: FastifyReply, err: GatewayError, url: string): void {
  if (err.retryAfter !== undefined) reply.header('retry-after', String(err.retryAfter));
  reply.header('x-request-id', reply.request.id);
  // refused before its body was read (a wrong key, a foreign Host): drop the connection rather
  // than read the rest of an upload nobody wants
  if (reply.request.raw.complete === false) reply.header('connection', 'close');
  // an Anthropic caller's bad key or unknown model: told not to retry, as on /v1/messages (routes/anthropic.ts)
  if (NO_RETRY.has(err.status) && wantsAnthropicErrors(url, reply.request.headers)) {
    reply.header('x-should-retry', 'false');
  }
  reply.code(err.status).send(renderErrorBody(err, url, reply.request.headers));
}

const NO_RETRY = new Set([401, 403, 404]);

/** The error's body in the shape of the surface `url` (or an `anthropic-version` caller) belongs to. */
export function renderErrorBody(err: GatewayError, url: string, headers?: IncomingHttpHeaders) {
  // Ollama's native API (routes/ollama.ts): `{"error": "…"}`, whatever went wrong
  if (url.startsWith('/api/')) return err.toOllama();
  return url.startsWith('/v1/messages') || wantsAnthropicErrors(url, headers) ? err.toAnthropic() : err.toOpenAI();
}

/**
 * fastify's `clientErrorHandler`: errors Node's HTTP parser raises before a request exists
 * (headers too large, a garbled request line, a header timeout), which no fastify hook or
 * error handler ever sees. Answers them in the same shape as every other error (SDKs parse
 * `error.message`), then closes the connection: the parser cannot resume mid-stream.
 */
export function clientErrorHandler(this: FastifyInstance, err: ConnectionError, socket: Socket): void {
  // a reset connection is gone already; nothing to answer
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  this.log.trace({ err }, 'client error');
  // a response already under way on this keep-alive socket: a second head would corrupt it
  const current = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
  if (socket.writable && !current?.headersSent) {
    const gerr = clientGatewayError(err);
    const head = requestHead(err.rawPacket);
    const body = JSON.stringify(renderErrorBody(gerr, head.target, head.headers));
    socket.write(
      `HTTP/1.1 ${gerr.status} ${STATUS_CODES[gerr.status]}\r\n` +
        'content-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        'connection: close\r\n\r\n' +
        // an answer to HEAD has no content (the client would read it as the next answer)
        (head.method === 'HEAD' ? '' : body),
    );
  }
  socket.destroy(err);
}

function clientGatewayError(err: ConnectionError): GatewayError {
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return new GatewayError({
      status: 431,
      code: 'request_headers_too_large',
      message:
        `The request headers are larger than the gateway accepts ` +
        `(${Math.round(maxHeaderSize / 1024)} KiB in all).`,
    });
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new GatewayError({ status: 408, code: 'request_timeout', message: 'The request was not received in time.' });
  }
  return new GatewayError({
    status: 400,
    code: 'malformed_request',
    message: 'The gateway could not parse this HTTP request.',
  });
}

/**
 * What can be read of the packet the parser choked on: the method and target of its request
 * line ('' when it has none), and whether it names an `anthropic-version` (that caller's shape).
 */
function requestHead(raw: unknown): { method: string; target: string; headers?: IncomingHttpHeaders } {
  if (!Buffer.isBuffer(raw)) return { method: '', target: '' };
  const text = raw.subarray(0, 64 * 1024).toString('latin1');
  const line = /^([A-Z]+) (\S+) HTTP\//.exec(text);
  const version = /\r\nanthropic-version:[ \t]*([^\r\n]*)/i.exec(text);
  return {
    method: line?.[1] ?? '',
    target: line?.[2] ?? '',
    ...(version ? { headers: { 'anthropic-version': version[1] } } : {}),
  };
}
