/**
 * One backend as the admin API or the console sends it, made a validated spec: its secrets
 * resolved first (a blank `api_key` or a masked echo keeps the one in force, `{clear: true}`
 * removes it, a masked URL keeps its password; `api_keys` likewise, backend-key-pool-input.ts), then
 * config.yaml's backend rules. Pure.
 */
import { restoreMaskedUrl } from '../backends/secret-scrub.ts';
import type { ConfigProblem } from '../config/problems.ts';
import type { ConfigValidator } from '../config/schema.ts';
import type { BackendSpec } from '../config/types.ts';
import { isObject } from '../json.ts';
import { resolveKeyPool } from './backend-key-pool-input.ts';

export type PreparedBackend = { ok: true; spec: BackendSpec } | { ok: false; problems: ConfigProblem[] };

export interface PrepareContext {
  /** The backend's current name when the input replaces (renames) it. */
  replace?: string;
  /** The backends in force, whose secrets a blank or masked input keeps. */
  inForce: readonly BackendSpec[];
  validator: ConfigValidator;
}

/**
 * The input as a validated spec: the secret resolved (blank or a masked echo keeps the one
 * in force for `replace ?? name`, as long as the URL's origin is unchanged — a stored key is
 * never sent to a new address; `{clear: true}` removes it), then config.yaml's backend rules.
 */
export function prepareBackend(input: unknown, ctx: PrepareContext): PreparedBackend {
  const { replace, inForce } = ctx;
  if (!isObject(input)) return { ok: false, problems: [{ path: '', message: 'must be a mapping of backend fields' }] };
  const raw: Record<string, unknown> = structuredClone(input);
  const secret = raw.api_key;
  const clear = isObject(secret) && secret.clear === true;
  // a pool given as a list replaces a sole key in force (api_keys and api_key never both)
  const keep =
    !clear &&
    !Array.isArray(raw.api_keys) &&
    (secret === undefined || secret === null || secret === '' || (isObject(secret) && secret.set === true));
  if (keep || clear) delete raw.api_key;
  // a URL shown masked (`:***@`) and sent back unchanged keeps its password
  const before = inForce.find((b) => b.name === (replace ?? raw.name));
  raw.url = restoreMaskedUrl(raw.url, before?.url);
  const problems: ConfigProblem[] = [];
  const previous = keep ? inForce.find((b) => b.name === (replace ?? raw.name)) : undefined;
  if (previous?.api_key !== undefined && typeof raw.url === 'string') {
    const origin = originOf(raw.url);
    if (origin === originOf(previous.url)) raw.api_key = previous.api_key;
    else if (origin)
      problems.push({
        path: 'api_key',
        message: 'the URL points somewhere new: enter the key again (a stored key is never sent to a new address)',
      });
  }
  if (typeof raw.url === 'string')
    problems.push(...resolveKeyPool(raw, before, !!before && originOf(raw.url) === originOf(before.url)));
  const checked = ctx.validator.validateBackend(raw);
  if (!checked.ok) problems.push(...checked.problems);
  return problems.length > 0 || !checked.ok ? { ok: false, problems } : { ok: true, spec: checked.spec };
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
