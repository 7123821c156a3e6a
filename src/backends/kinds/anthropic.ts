/**
 * `type: anthropic`: Anthropic's API, passed through verbatim and reachable only through
 * `/v1/messages` (the licence boundary). Its credential is an API key in `x-api-key`, or a
 * Claude subscription's OAuth token as a bearer token plus the OAuth beta; the gateway's own
 * requests name an `anthropic-version`, as do client requests that named none.
 */
import type { BackendKind, CredentialSpec } from './types.ts';

/** The beta flag Anthropic's API requires alongside an OAuth (subscription) token. */
export const OAUTH_BETA = 'oauth-2025-04-20';

/** The API version the gateway's own requests (discovery) name, and a client's that named none. */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/** The credential headers of an anthropic backend (none without an api_key). */
export function anthropicCredential(spec: CredentialSpec): Record<string, string> {
  if (!spec.api_key) return {};
  if (spec.auth_mode === 'subscription') return { authorization: `Bearer ${spec.api_key}` };
  return { 'x-api-key': spec.api_key };
}

/**
 * The `anthropic-beta` value to send: the client's flags (a header may repeat, each a comma
 * list) in their order, plus the OAuth beta for a subscription token when it is missing.
 */
export function anthropicBeta(spec: CredentialSpec, client: string | string[] | undefined): string | undefined {
  const flags = (Array.isArray(client) ? client : client === undefined ? [] : [client])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  if (spec.auth_mode === 'subscription' && spec.api_key && !flags.includes(OAUTH_BETA)) flags.push(OAUTH_BETA);
  return flags.length ? flags.join(',') : undefined;
}

/** What the gateway's own requests (discovery, count_tokens) add to the credential. */
function versionHeaders(spec: CredentialSpec): Record<string, string> {
  const headers: Record<string, string> = { 'anthropic-version': DEFAULT_ANTHROPIC_VERSION };
  const beta = anthropicBeta(spec, undefined);
  if (beta) headers['anthropic-beta'] = beta;
  return headers;
}

export const anthropicKind: BackendKind = {
  type: 'anthropic',
  isMedia: false,
  // all of Anthropic's models on one page
  probe: { path: '/v1/models?limit=1000', reads: 'model-list' },
  native: ['messages', 'count_tokens'],
  nativeOnRequest: [],
  translated: [],
  authHeaders: anthropicCredential,
  ownHeaders: versionHeaders,
  basicFromUrl: false,
  defaults: {},
  pricedPerToken: true,
  hasAuthMode: true,
  // cache_control reaches it as the client sent it
  translatesCacheControl: false,
  residency: 'none',
  loadAnswers: [],
};
