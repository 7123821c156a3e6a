/**
 * A backend's secrets never leave the gateway in clear: its API key and the password of its
 * URL (`http://admin:pw@host`). Pure helpers:
 *
 * - `redactBackendText` takes every copy of them out of a text a backend sent (a 401 body that
 *   echoes the key) before it is stored as the backend's last error, logged or relayed;
 * - `maskUrl` shows a URL with its password replaced by `***` (health, admin API, console);
 *   `restoreMaskedUrl` puts the real one back when a masked URL comes back from a form;
 * - `splitUserinfo` / `joinUserinfo` let the store keep the userinfo encrypted, apart from the URL;
 * - `basicCredential` turns the userinfo into the Basic credential requests carry.
 */
import type { BackendSpec } from '../config/types.ts';
import type { BackendError } from './types.ts';
import { parseUrl, serialise } from '../config/url-userinfo.ts';

export const URL_PASSWORD_MASK = '***';
const REDACTED = '[redacted]';
/** Shorter values are not searched for (they would match ordinary words). */
const MIN_SECRET_LENGTH = 4;

/** The secret strings of a spec, in the forms a backend may echo them (plain, URL-encoded, Basic). */
export function backendSecrets(spec: Pick<BackendSpec, 'api_key' | 'url' | 'api_keys'>): string[] {
  const out = new Set<string>();
  const add = (value: string | undefined) => {
    if (value && value.length >= MIN_SECRET_LENGTH) out.add(value);
  };
  for (const key of spec.api_keys ? [spec.api_key, ...spec.api_keys] : [spec.api_key]) {
    add(key);
    if (key) add(encodeURIComponent(key));
  }
  const parsed = parseUrl(spec.url);
  if (parsed && parsed.password) {
    const user = safeDecode(parsed.username);
    const password = safeDecode(parsed.password);
    add(password);
    add(parsed.password);
    add(Buffer.from(`${user}:${password}`).toString('base64'));
  }
  // longest first, so a value that contains another is taken out whole
  return [...out].sort((a, b) => b.length - a.length);
}

export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/** `text` without any copy of the backend's key or URL password. */
export function redactBackendText(text: string, spec: Pick<BackendSpec, 'api_key' | 'url' | 'api_keys'>): string {
  return redactText(text, backendSecrets(spec));
}

/** The error with its detail redacted (the one place a backend's last error is stored calls this). */
export function redactBackendError<E extends Pick<BackendError, 'detail'>>(
  error: E,
  spec: Pick<BackendSpec, 'api_key' | 'url' | 'api_keys'>,
): E {
  const detail = redactBackendText(error.detail, spec);
  return detail === error.detail ? error : { ...error, detail };
}

/** `Basic base64(user:password)` for a URL with userinfo; undefined without. */
export function basicCredential(url: string): string | undefined {
  if (!url.includes('@')) return undefined; // no userinfo: no URL parse on every upstream request
  const parsed = parseUrl(url);
  if (!parsed || (!parsed.username && !parsed.password)) return undefined;
  const pair = `${safeDecode(parsed.username)}:${safeDecode(parsed.password)}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

/** `http://admin:***@host:8080/base`: the password masked (the user name stays, it says which account). */
export function maskUrl(url: string): string {
  const parsed = parseUrl(url);
  if (!parsed || !parsed.password) return url;
  parsed.password = URL_PASSWORD_MASK;
  return serialise(parsed, url);
}

/**
 * A URL that came back masked (`:***@`) with the previous password put back, when it is the
 * same URL otherwise (scheme, user, host, port, path); anything else is returned as given.
 */
export function restoreMaskedUrl(submitted: unknown, previous: string | undefined): unknown {
  if (typeof submitted !== 'string' || previous === undefined) return submitted;
  if (parseUrl(submitted)?.password !== URL_PASSWORD_MASK) return submitted;
  return maskUrl(previous) === maskUrl(submitted) ? previous : submitted;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
