/**
 * Request bodies sent compressed (`Content-Encoding: gzip`, `deflate` or `br`) are decoded
 * before any parser sees them, and the header is dropped, so a backend never gets decoded
 * bytes labelled as compressed. The route's body limit applies to the decoded size (a small
 * gzip of zeros cannot grow into gigabytes: the decoder is stopped at the limit, 413).
 * Refused with 415: an encoding other than those (or a chain of several), and any encoding on
 * a multipart upload (its parser reads the socket itself, past this hook).
 */
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';

const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** fastify's own default, for a request no route matched. */
const FALLBACK_LIMIT = 1024 * 1024;

type Payload = Readable & { receivedEncodedLength?: number };

/** A fastify preParsing hook: the payload as is, or a decoding stream in its place. */
export function decodeRequestBody(
  req: FastifyRequest,
  _reply: FastifyReply,
  payload: Payload,
  done: (err: Error | null, stream?: Payload) => void,
): void {
  const header = req.headers['content-encoding'];
  const encoding = (Array.isArray(header) ? header.join(',') : (header ?? '')).trim().toLowerCase();
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (encoding === '' || encoding === 'identity' || !hasBody) {
    done(null, payload);
    return;
  }
  const decoder = DECODERS[encoding];
  if (!decoder || /^\s*multipart\//i.test(req.headers['content-type'] ?? '')) {
    done(unsupportedEncoding(encoding, !!decoder));
    return;
  }
  delete req.headers['content-encoding'];
  done(null, decoding(payload, decoder(), req.routeOptions.bodyLimit ?? FALLBACK_LIMIT));
}

function decoding(source: Payload, decoder: NodeJS.ReadWriteStream, limit: number): Payload {
  const out = decoder as unknown as Payload;
  out.receivedEncodedLength = 0;
  let decoded = 0;
  source.on('data', (chunk: Buffer) => {
    out.receivedEncodedLength! += chunk.length;
  });
  out.on('data', (chunk: Buffer) => {
    decoded += chunk.length;
    // past the limit the parser answers 413; stop inflating what nobody will read
    if (decoded > limit) {
      source.unpipe(out as unknown as NodeJS.WritableStream);
      out.destroy();
    }
  });
  // a client gone mid-body ends the decoder too, or the parser would wait for it forever
  source.once('error', (err: Error) => out.destroy(err));
  source.once('close', () => {
    const complete = (source as Payload & { complete?: boolean }).complete;
    if (complete === false) out.destroy(new Error('the client went away mid-body'));
  });
  source.pipe(out as unknown as NodeJS.WritableStream);
  // a route that never reads the body (415, 404 before parsing) has no listener of its own: bad
  // data must not become an uncaught exception that ends the process
  out.on('error', () => undefined);
  return wrapErrors(out);
}

/** zlib's own errors ("incorrect header check") become a 400 that says what was wrong. */
function wrapErrors(stream: Payload): Payload {
  const emit = stream.emit.bind(stream);
  stream.emit = ((event: string, ...args: unknown[]) => {
    if (event === 'error' && !(args[0] instanceof GatewayError)) {
      return emit(
        'error',
        new GatewayError({
          status: 400,
          code: 'invalid_body_encoding',
          message:
            'The request body could not be decoded as its Content-Encoding says ' +
            `(${(args[0] as Error)?.message ?? 'bad data'}).`,
        }),
      );
    }
    return emit(event, ...args);
  }) as typeof stream.emit;
  return stream;
}

function unsupportedEncoding(encoding: string, known: boolean): GatewayError {
  return new GatewayError({
    status: 415,
    code: 'unsupported_content_encoding',
    message: known
      ? `A multipart upload cannot be sent with Content-Encoding: ${encoding}; send it uncompressed.`
      : `Content-Encoding: ${encoding.slice(0, 60)} is not supported; ` +
        'send the body uncompressed, or as gzip, deflate or br.',
  });
}
