/**
 * Fetching a URL a client handed in (a reference image, a `files` entry) without letting it
 * reach what it should not: http(s) only, on the first URL and on every redirect hop
 * (followed by hand, at most `maxRedirects`); a cap on the bytes (Content-Length refused up
 * front, the stream cut once it passes the cap) and on the time of the whole fetch.
 *
 * With `allowPrivate` false, every connection goes through address-guard.ts's connector.
 *
 * Errors are MediaInputErrors naming the param; URLs in messages are redacted (no userinfo,
 * no query string: signed URLs carry their credentials there).
 */
import { isIP } from 'node:net';
import { request, type Dispatcher } from 'undici';
import type { MediaFile } from '../service-types.ts';
import { addressRefusal, AddressRefused, defaultAgent } from './address-guard.ts';
import { MediaInputError, tooLarge } from './errors.ts';
import { sniffMime } from './sniff.ts';

export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_REDIRECTS = 5;

/** Several reads sharing one byte cap (decodeFileMap's total): `take` throws once the sum passes it. */
export interface ByteBudget {
  take(bytes: number): void;
}

/**
 * A ByteBudget of `totalBytes`: `take` throws `over()` once the sum passes it, and hands every
 * take on to `outer` too (a request's budget around one map's).
 */
export function byteBudget(totalBytes: number, over: () => Error, outer?: ByteBudget): ByteBudget {
  let used = 0;
  return {
    take(bytes) {
      used += bytes;
      if (used > totalBytes) throw over();
      outer?.take(bytes);
    },
  };
}

export interface FetchOptions {
  /** One file's cap, decoded bytes (default 64 MiB). */
  maxBytes?: number;
  /** The whole fetch, all hops and the body (default 30 s). */
  timeoutMs?: number;
  /** Whether loopback/private/link-local/... addresses may be fetched (`ref_url_allow_private`). */
  allowPrivate: boolean;
  maxRedirects?: number;
  /**
   * Replaces the built-in agent. The private-address guarantee then rests on it: make it with
   * createRefAgent (IP literals are still refused here either way).
   */
  dispatcher?: Dispatcher;
  /** Stops the fetch (rejecting with the signal's reason). */
  signal?: AbortSignal;
  budget?: ByteBudget;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

// ---------------------------------------------------------------------------------------------
// Fetching

/**
 * `url` for messages and logs: scheme, host, port and path only (no userinfo, query or fragment), at
 * most 200 characters.
 */
export function redactUrl(url: string | URL): string {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return '(an invalid URL)';
  }
  const text =
    u.protocol === 'http:' || u.protocol === 'https:' ? `${u.protocol}//${u.host}${u.pathname}` : `${u.protocol}…`;
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

function httpUrl(text: string, base: URL | undefined, param: string): URL {
  let u: URL;
  try {
    u = new URL(text, base);
  } catch {
    throw new MediaInputError(
      400,
      param,
      'invalid_media_value',
      base ? `could not fetch ${param}: ${redactUrl(base)} redirects to an invalid URL` : `${param} is not a valid URL`,
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new MediaInputError(
      400,
      param,
      'unsupported_url',
      base
        ? `could not fetch ${param}: ${redactUrl(base)} redirects to a ${u.protocol} URL; only http ` +
            `and https are followed`
        : `${param} is a ${u.protocol} URL; only http and https URLs are fetched`,
    );
  }
  return u;
}

const TIMEOUT = Symbol('timeout');

function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

function unescapeUserinfo(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // a stray `%`: sent as written
  }
}

/**
 * GETs `url` (following redirects by hand) and returns its bytes, with the MIME type sniffed
 * from them or else the response's Content-Type. `param` names the value in errors.
 */
export async function fetchRef(url: string, opts: FetchOptions, param = 'url'): Promise<MediaFile> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const dispatcher = opts.dispatcher ?? defaultAgent(opts.allowPrivate);
  const first = httpUrl(url, undefined, param);
  const origin = first.origin;
  const auth =
    first.username || first.password
      ? basicAuth(unescapeUserinfo(first.username), unescapeUserinfo(first.password))
      : undefined;

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(TIMEOUT), timeoutMs);
  const outer = opts.signal;
  const onOuterAbort = () => controller.abort(outer!.reason);
  if (outer?.aborted) onOuterAbort();
  else outer?.addEventListener('abort', onOuterAbort, { once: true });

  let current = first;
  try {
    for (let hop = 0; ; hop++) {
      if (!opts.allowPrivate) refuseLiteral(current, param);
      const target = new URL(current);
      target.username = '';
      target.password = '';
      target.hash = '';
      const headers: Record<string, string> = { accept: '*/*', 'user-agent': 'llm-gateway' };
      // credentials from the URL go to its own origin only, never to where it redirects
      if (auth && target.origin === origin) headers.authorization = auth;
      const res = await request(target, { method: 'GET', headers, signal: controller.signal, dispatcher });
      if (REDIRECTS.has(res.statusCode)) {
        await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        const location = res.headers.location;
        const loc = Array.isArray(location) ? location[0] : location;
        if (!loc) throw fetchFailed(param, current, `the server answered ${res.statusCode} without a Location`);
        if (hop >= maxRedirects) {
          throw new MediaInputError(
            400,
            param,
            'too_many_redirects',
            `could not fetch ${param}: more than ${maxRedirects} redirects from ${redactUrl(first)}`,
          );
        }
        current = httpUrl(loc, current, param);
        continue;
      }
      if (res.statusCode < 200 || res.statusCode > 299) {
        await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        throw fetchFailed(param, current, `the server answered ${res.statusCode}`);
      }
      const length = Number(res.headers['content-length']);
      if (Number.isFinite(length) && length > maxBytes) {
        res.body.destroy();
        throw tooLarge(param, maxBytes);
      }
      const bytes = await readCapped(res.body, maxBytes, param, opts.budget);
      if (bytes.length === 0) throw fetchFailed(param, current, 'the server sent an empty file');
      return {
        bytes,
        mime: sniffMime(bytes) ?? contentType(res.headers['content-type']) ?? 'application/octet-stream',
      };
    }
  } catch (err) {
    if (err instanceof MediaInputError) throw err;
    if (controller.signal.aborted && controller.signal.reason === TIMEOUT) {
      throw new MediaInputError(
        400,
        param,
        'fetch_timeout',
        `could not fetch ${param}: timed out after ${timeoutMs / 1000} s (${redactUrl(current)})`,
      );
    }
    if (outer?.aborted) throw outer.reason;
    const refused = findRefusal(err);
    if (refused) throw privateAddress(param, current, refused.message);
    throw fetchFailed(param, current, networkReason(err, current));
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

async function readCapped(
  body: Dispatcher.ResponseData['body'],
  maxBytes: number,
  param: string,
  budget: ByteBudget | undefined,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > maxBytes) throw tooLarge(param, maxBytes);
      budget?.take(chunk.length);
      chunks.push(chunk);
    }
  } catch (err) {
    body.destroy();
    throw err;
  }
  return Buffer.concat(chunks, total);
}

function refuseLiteral(u: URL, param: string): void {
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) === 0) return;
  const why = addressRefusal(host);
  if (why) throw privateAddress(param, u, `${host} is ${why}`);
}

function privateAddress(param: string, u: URL, detail: string): MediaInputError {
  return new MediaInputError(
    400,
    param,
    'private_address',
    `could not fetch ${param}: ${redactUrl(u)} is not fetched, ${detail} (fetching private ` +
      `addresses is turned off: ref_url_allow_private)`,
  );
}

function fetchFailed(param: string, u: URL, reason: string): MediaInputError {
  return new MediaInputError(400, param, 'fetch_failed', `could not fetch ${param}: ${reason} (${redactUrl(u)})`);
}

function findRefusal(err: unknown): AddressRefused | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof AddressRefused) return e;
    if (e instanceof AggregateError) {
      const inner = e.errors.find((x) => x instanceof AddressRefused);
      if (inner) return inner as AddressRefused;
    }
  }
  return undefined;
}

function networkReason(err: unknown, u: URL): string {
  const code = (err as { code?: string })?.code;
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the host ${u.hostname} was not found`;
    case 'ECONNREFUSED':
      return 'the connection was refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed';
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'connecting timed out';
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return 'the server stopped answering';
    default:
      return code ? `network error ${code}` : 'network error';
  }
}

/** The MIME type of a Content-Type header, without parameters; undefined when absent or not type/subtype. */
function contentType(header: string | string[] | undefined): string | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.split(';')[0].trim().toLowerCase();
  return value && /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(value) ? value : undefined;
}
