/**
 * The credential headers every request of the gateway's to a backend carries, by its kind
 * (backends/kinds/): the api_key as the kind sends it, else (for kinds that allow it) the URL's
 * userinfo as Basic auth, since requests go to the URL's origin, which never carries it.
 */
import type { BackendSpec } from '../config/types.ts';
import { kindOf } from './kinds/index.ts';
import { basicCredential } from './secret-scrub.ts';

/** Credential headers the gateway's own requests to a backend carry (Anthropic's with its version). */
export function credentialHeaders(given: BackendSpec): Record<string, string> {
  // a pool's attempts come with their key as api_key (withKey); anything else uses its first key
  const spec = given.api_key === undefined && given.api_keys ? withKey(given, given.api_keys[0]) : given;
  const kind = kindOf(spec);
  if (!spec.api_key && kind.basicFromUrl) {
    const basic = basicCredential(spec.url);
    return basic ? { authorization: basic } : {};
  }
  return { ...kind.authHeaders(spec), ...kind.ownHeaders(spec) };
}

/** The spec with `key` as its api_key: one attempt of a pooled backend, or a probe with the pool's usable key. */
export function withKey(spec: BackendSpec, key: string | undefined): BackendSpec {
  return key === undefined ? spec : { ...spec, api_key: key };
}
