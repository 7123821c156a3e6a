/**
 * The credential headers every request of the gateway's to a backend carries, by its kind
 * (backends/kinds/): the api_key as the kind sends it, else (for kinds that allow it) the URL's
 * userinfo as Basic auth, since requests go to the URL's origin, which never carries it.
 */
import type { BackendSpec } from '../config/types.ts';
import { kindOf } from './kinds/index.ts';
import { basicCredential } from './secret-scrub.ts';

/** Credential headers the gateway's own requests to a backend carry (Anthropic's with its version). */
export function credentialHeaders(spec: BackendSpec): Record<string, string> {
  const kind = kindOf(spec);
  if (!spec.api_key && kind.basicFromUrl) {
    const basic = basicCredential(spec.url);
    return basic ? { authorization: basic } : {};
  }
  return { ...kind.authHeaders(spec), ...kind.ownHeaders(spec) };
}
