/**
 * What an open gateway (no api_key, no users) refuses on every route, before any body is read:
 *
 * - a Host that does not name this machine (DNS rebinding: a page on `evil.example`, its name
 *   re-pointed at 127.0.0.1, would otherwise read the jobs, stored responses and models of every
 *   local client). This machine is loopback, its hostname and its addresses (own-host.ts), plus
 *   `allowed_hosts`; a forwarded host, when one is sent, must pass too;
 * - a request that changes something (POST, PUT, PATCH, DELETE) sent by a web page of another
 *   site: an `Origin` that is not loopback, not this machine and not in `cors_origins`. A
 *   multipart or urlencoded form needs no CORS preflight, so CORS alone does not stop it.
 *
 * Pure apart from the OwnHost lookups; the hook is in app.ts.
 */
import { GatewayError } from '../errors.ts';
import type { OwnHost } from './own-host.ts';

export interface OpenGuardRequest {
  method: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface OpenGuardSettings {
  /** Extra names the open gateway answers to (`allowed_hosts`). */
  allowedHosts: readonly string[];
  /** Browser origins allowed to call the API (`cors_origins`). */
  corsOrigins: readonly string[];
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The 403 an open gateway answers `req` with, or undefined when the request may go on. */
export function openGatewayRefusal(
  req: OpenGuardRequest, own: OwnHost, settings: OpenGuardSettings,
): GatewayError | undefined {
  const wrongHost = foreignHost(req.headers, own, settings.allowedHosts);
  if (wrongHost !== undefined) return hostRefused(wrongHost.value);
  if (SAFE_METHODS.has(req.method.toUpperCase())) return undefined;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  const value = single(origin);
  if (value !== undefined && originPermitted(value, own, settings)) return undefined;
  return originRefused(value);
}

/** Whether the request's Host (and forwarded host, when one is sent) names this machine or an `allowed_hosts` entry. */
export function addressedToThisMachine(
  headers: OpenGuardRequest['headers'], own: OwnHost, allowedHosts: readonly string[],
): boolean {
  return foreignHost(headers, own, allowedHosts) === undefined;
}

/** The first Host-like header that names somewhere else (its value; undefined inside when absent or repeated). */
function foreignHost(
  headers: OpenGuardRequest['headers'], own: OwnHost, allowed: readonly string[],
): { value?: string } | undefined {
  const host = single(headers.host);
  if (!hostAllowed(host, own, allowed)) return { value: host };
  const forwarded = headers['x-forwarded-host'];
  if (forwarded === undefined) return undefined;
  const first = single(forwarded)?.split(',')[0];
  return hostAllowed(first, own, allowed) ? undefined : { value: first };
}

/** The hostname of a Host header's value (`localhost:8080`, `[::1]:3000`), lower-cased; undefined if malformed. */
export function authorityHostname(authority: string | undefined): string | undefined {
  const value = authority?.trim();
  if (!value || /[/?#@\\\s]/.test(value)) return undefined;
  try {
    return new URL(`http://${value}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

function hostAllowed(authority: string | undefined, own: OwnHost, allowed: readonly string[]): boolean {
  const hostname = authorityHostname(authority);
  if (hostname === undefined) return false;
  return own.isOwnName(hostname) || allowed.some((a) => a.trim().toLowerCase() === hostname);
}

/** A loopback origin or one of this machine (the console's own forms), or one listed in `cors_origins`. */
function originPermitted(origin: string, own: OwnHost, settings: OpenGuardSettings): boolean {
  if (originAllowed(origin, settings.corsOrigins)) return true;
  if (!/^https?:\/\//i.test(origin.trim())) return false;
  let hostname: string;
  try {
    hostname = new URL(origin.trim()).hostname.toLowerCase();
  } catch {
    return false;
  }
  return own.isOwnName(hostname) || settings.allowedHosts.some((a) => a.trim().toLowerCase() === hostname);
}

/** Exact origin match (scheme, host and port; case and a trailing slash in the config aside), or "*". */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return false;
  const wanted = origin.toLowerCase();
  return allowed.some((a) => a === '*' || a.toLowerCase().replace(/\/+$/, '') === wanted);
}

function hostRefused(host: string | undefined): GatewayError {
  const named = host === undefined ? 'a request without a usable Host header' : `\`Host: ${host.slice(0, 100)}\``;
  return new GatewayError({
    status: 403,
    code: 'host_not_allowed',
    message: `This gateway is open (no api_key and no users), so it answers only requests addressed to this machine `
      + `(localhost, 127.0.0.1, [::1], its hostname or one of its addresses), and ${named} is not one: `
      + 'a web page that re-points its own name at this machine (DNS rebinding) looks like this. '
      + 'Address the gateway by one of those names, list the name in allowed_hosts, '
      + 'or lock the gateway (set api_key, or create an admin user).',
  });
}

function originRefused(origin: string | undefined): GatewayError {
  return new GatewayError({
    status: 403,
    code: 'origin_not_allowed',
    message: 'This gateway is open (no api_key and no users), so it takes no request that changes something '
      + `from a web page of another site (Origin: ${origin === undefined ? 'several values' : origin.slice(0, 100)}). `
      + 'List that origin in cors_origins to let the page call the gateway, '
      + 'or lock the gateway (set api_key, or create an admin user).',
  });
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
}
