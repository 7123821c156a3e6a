/**
 * The `api_keys` of a backend as the admin API or the console sends it, resolved against the
 * pool in force before validation: left out keeps the pool in force (unless a new `api_key`
 * replaces it), `{clear: true}` removes it, and in a list an entry echoed masked (`{set: true,
 * hint}`, as the views show it) is the key in force with that hint. A stored key is never sent
 * to a new address: with the URL's origin changed, kept or echoed keys must be typed again. Pure.
 */
import type { ConfigProblem } from '../config/problems.ts';
import type { BackendSpec } from '../config/types.ts';
import { isObject } from '../json.ts';
import { secretHint } from './config-views.ts';

const NEW_ADDRESS = 'the URL points somewhere new: enter the keys again (a stored key is never sent to a new address)';

/** Resolves `raw.api_keys` in place; `sameOrigin`: the URL's origin is the one of `previous`. */
export function resolveKeyPool(
  raw: Record<string, unknown>,
  previous: BackendSpec | undefined,
  sameOrigin: boolean,
): ConfigProblem[] {
  const given = raw.api_keys;
  if (isObject(given) && given.clear === true) {
    delete raw.api_keys;
    return [];
  }
  if (given === undefined || given === null || given === '') {
    delete raw.api_keys;
    // a new sole key replaces the pool; otherwise the pool in force stays
    if ((typeof raw.api_key === 'string' && raw.api_key !== '') || !previous?.api_keys) return [];
    if (!sameOrigin) return [{ path: 'api_keys', message: NEW_ADDRESS }];
    raw.api_keys = [...previous.api_keys];
    return [];
  }
  if (!Array.isArray(given)) return []; // the schema says what is wrong
  const unused = [...(previous?.api_keys ?? [])];
  const problems: ConfigProblem[] = [];
  raw.api_keys = given.map((entry, i) => {
    if (!(isObject(entry) && entry.set === true)) return entry;
    const at = sameOrigin ? unused.findIndex((key) => secretHint(key) === entry.hint) : -1;
    if (at < 0) {
      const message = sameOrigin ? 'a masked key that matches no key in force: type it again' : NEW_ADDRESS;
      problems.push({ path: `api_keys[${i}]`, message });
      return entry;
    }
    return unused.splice(at, 1)[0];
  });
  return problems;
}
