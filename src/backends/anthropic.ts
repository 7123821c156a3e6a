/**
 * Anthropic's quirks as a backend: how its credential is sent (an API key, or a Claude
 * subscription's OAuth token, which also needs the OAuth beta), and the `anthropic-version`
 * it gets when the client sent none.
 */
import type { BackendSpec } from '../config/types.ts';

/** The beta flag Anthropic's API requires alongside an OAuth (subscription) token. */
export const OAUTH_BETA = 'oauth-2025-04-20';

/** The API version the gateway's own requests (discovery) name, and a client's that named none. */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/** The credential headers of an anthropic backend (none without an api_key). */
export function anthropicCredential(spec: BackendSpec): Record<string, string> {
  if (!spec.api_key) return {};
  if (spec.auth_mode === 'subscription') return { authorization: `Bearer ${spec.api_key}` };
  return { 'x-api-key': spec.api_key };
}

/**
 * The `anthropic-beta` value to send: the client's flags (a header may repeat, each a comma
 * list) in their order, plus the OAuth beta for a subscription token when it is missing.
 */
export function anthropicBeta(spec: BackendSpec, client: string | string[] | undefined): string | undefined {
  const flags = (Array.isArray(client) ? client : client === undefined ? [] : [client])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  if (spec.auth_mode === 'subscription' && spec.api_key && !flags.includes(OAUTH_BETA)) flags.push(OAUTH_BETA);
  return flags.length ? flags.join(',') : undefined;
}

/** Headers of the gateway's own requests to an anthropic backend (discovery, count_tokens fallback). */
export function anthropicOwnHeaders(spec: BackendSpec): Record<string, string> {
  const headers = anthropicCredential(spec);
  headers['anthropic-version'] = DEFAULT_ANTHROPIC_VERSION;
  const beta = anthropicBeta(spec, undefined);
  if (beta) headers['anthropic-beta'] = beta;
  return headers;
}
