import type { IncomingHttpHeaders } from 'node:http';

/** Hop-by-hop headers (RFC 9110 §7.6.1): dropped both ways. */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/** Hop-by-hop headers plus ones the gateway recomputes or must not forward. */
const DROPPED_REQUEST_HEADERS = new Set([
  ...HOP_BY_HOP,
  'host',
  'content-length',
  'expect',
  // client credentials never reach a backend; the backend's own are added instead
  'authorization',
  'x-api-key',
  'cookie',
  // nor do the client's own account selectors (OpenAI organization/project, Azure's key
  // header): the backend's credentials decide which account pays, and a stray org id makes
  // OpenAI refuse the backend's key
  'openai-organization',
  'openai-project',
  'api-key',
  // the relay parses SSE and JSON, so ask for identity encoding
  'accept-encoding',
  // the gateway's own attribution header stays here, and so do its internal markers
  'x-source',
  'x-gateway-internal',
  'x-gateway-response-id',
  'x-gateway-created-at',
]);

const DROPPED_RESPONSE_HEADERS = new Set([
  ...HOP_BY_HOP,
  'content-length',
  'set-cookie',
  'date',
  'server',
  // whose account answered is the gateway operator's business, not the client's
  'anthropic-organization-id',
  'openai-organization',
  'openai-project',
]);

/** Request headers to send upstream: the client's, minus hop-by-hop and credentials, plus the backend's. */
export function upstreamRequestHeaders(
  client: IncomingHttpHeaders,
  credentials: Record<string, string>,
  contentLength: number,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connectionListed = listedInConnection(client.connection);
  for (const [name, value] of Object.entries(client)) {
    if (value === undefined || DROPPED_REQUEST_HEADERS.has(name) || connectionListed.has(name)) continue;
    out[name] = value;
  }
  out['content-type'] = 'application/json';
  out['content-length'] = String(contentLength);
  return Object.assign(out, credentials);
}

/** Response headers to pass back to the client from an upstream answer. */
export function clientResponseHeaders(
  upstream: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connectionListed = listedInConnection(upstream.connection);
  for (const [name, value] of Object.entries(upstream)) {
    if (value === undefined || DROPPED_RESPONSE_HEADERS.has(name) || connectionListed.has(name)) continue;
    out[name] = value;
  }
  return out;
}

const NONE: ReadonlySet<string> = new Set();

/** Header names a `Connection` header lists (hop-by-hop for this hop only). */
function listedInConnection(value: string | string[] | undefined): ReadonlySet<string> {
  if (!value) return NONE;
  const text = Array.isArray(value) ? value.join(',') : value;
  return new Set(
    text
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
}
