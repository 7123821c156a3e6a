/**
 * What an open gateway (no api_key, no users) refuses on every route, before any body is read:
 *
 * - a Host that does not name this machine (DNS rebinding: a page on `evil.example`, its name
 *   re-pointed at 127.0.0.1, would otherwise read the jobs, stored responses and models of every
 *   local client). This machine is loopback, its hostname and its addresses (own-host.ts), plus
 *   `allowed_hosts`; a forwarded host, when one is sent, must pass too (a request with no Host
 *   at all is no browser's: HTTP/1.0 health checks pass). Names no web page can
 *   re-point pass as well (`cannotBeRebound`): any IP literal, `*.localhost` and the names
 *   container runtimes give the host (Open WebUI in Docker calling `host.docker.internal:4000`);
 * - a request that changes something (POST, PUT, PATCH, DELETE) sent by a web page of another
 *   site: an `Origin` that is not loopback, not this machine and not in `cors_origins`. A
 *   multipart or urlencoded form needs no CORS preflight, so CORS alone does not stop it.
 *
 * Pure apart from the OwnHost lookups; the hook is in app.ts.
 */
import { isIP } from 'node:net';
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
  req: OpenGuardRequest,
  own: OwnHost,
  settings: OpenGuardSettings,
): GatewayError | undefined {
  const wrongHost = foreignHost(req.headers, own, settings.allowedHosts);
  if (wrongHost !== undefined) return hostRefused(wrongHost);
  if (SAFE_METHODS.has(req.method.toUpperCase())) return undefined;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  const value = single(origin);
  if (value !== undefined && originPermitted(value, own, settings)) return undefined;
  return originRefused(value);
}

/** Whether the request's Host (and forwarded host, when one is sent) names this machine or an `allowed_hosts` entry. */
export function addressedToThisMachine(
  headers: OpenGuardRequest['headers'],
  own: OwnHost,
  allowedHosts: readonly string[],
): boolean {
  return foreignHost(headers, own, allowedHosts) === undefined;
}

/** A Host-like header that names somewhere else: which one, and its value (undefined when absent or repeated). */
interface ForeignHost {
  header: 'Host' | 'X-Forwarded-Host';
  value?: string;
}

/** The first Host-like header that names somewhere else. */
function foreignHost(
  headers: OpenGuardRequest['headers'],
  own: OwnHost,
  allowed: readonly string[],
): ForeignHost | undefined {
  // no Host at all (HTTP/1.0: HAProxy's default health check) is no browser: every browser sends one
  const host = single(headers.host);
  if (headers.host !== undefined && !hostAllowed(host, own, allowed)) return { header: 'Host', value: host };
  const forwarded = headers['x-forwarded-host'];
  if (forwarded === undefined) return undefined;
  const first = single(forwarded)?.split(',')[0].trim();
  return hostAllowed(first, own, allowed) ? undefined : { header: 'X-Forwarded-Host', value: first };
}

/**
 * The hostname of a Host header's value (`localhost:8080`, `[::1]:3000`, `[fe80::1%25eth0]:4000`), lower-cased,
 * without brackets or a trailing dot; undefined if malformed.
 */
export function authorityHostname(authority: string | undefined): string | undefined {
  if (authority === undefined) return undefined;
  // a gateway sees a handful of Host values: each is parsed once, not on every request
  if (hostnames.has(authority)) return hostnames.get(authority);
  if (hostnames.size >= HOSTNAME_CACHE_SIZE) hostnames.clear();
  const hostname = parseAuthorityHostname(authority);
  hostnames.set(authority, hostname);
  return hostname;
}

const HOSTNAME_CACHE_SIZE = 256;
const hostnames = new Map<string, string | undefined>();

function parseAuthorityHostname(authority: string): string | undefined {
  const value = authority.trim();
  if (!value || /[/?#@\\\s]/.test(value)) return undefined;
  const zoned = /^\[([0-9a-f:.]+)%25[\w.-]+\](?::\d*)?$/i.exec(value);
  if (zoned) return isIP(zoned[1]) === 6 ? zoned[1].toLowerCase() : undefined;
  try {
    return bareHostname(new URL(`http://${value}`).hostname);
  } catch {
    return undefined;
  }
}

function bareHostname(hostname: string): string {
  return hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/**
 * Names no web page can make resolve to this machine under its own origin, so DNS rebinding
 * cannot use them: an IP literal (rebinding needs a name), `*.localhost` (RFC 6761: loopback,
 * resolved by the browser itself) and the host's names inside containers (`.internal` is
 * reserved for private use and never delegated): Docker's `host.docker.internal` and
 * `gateway.docker.internal`, Podman's `host.containers.internal`.
 */
export function cannotBeRebound(hostname: string): boolean {
  const h = bareHostname(hostname);
  return isIP(h) !== 0 || h.endsWith('.localhost') || CONTAINER_HOST_NAMES.has(h);
}

const CONTAINER_HOST_NAMES = new Set([
  'host.docker.internal',
  'gateway.docker.internal',
  'host.containers.internal',
  'host.lima.internal',
]);

/** An `allowed_hosts` entry as a bare hostname: `gateway.lan`, `Gateway.LAN.`, `gateway.lan:4000`, `http://gw.lan`. */
function allowedName(entry: string): string | undefined {
  return authorityHostname(
    entry
      .trim()
      .replace(/^https?:\/\//i, '')
      .replace(/\/+$/, ''),
  );
}

function listed(hostname: string, allowed: readonly string[]): boolean {
  return allowed.some((entry) => allowedName(entry) === hostname);
}

function hostAllowed(authority: string | undefined, own: OwnHost, allowed: readonly string[]): boolean {
  const hostname = authorityHostname(authority);
  if (hostname === undefined) return false;
  return own.isOwnName(hostname) || cannotBeRebound(hostname) || listed(hostname, allowed);
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
  return own.isOwnName(hostname) || listed(bareHostname(hostname), settings.allowedHosts);
}

/** Exact origin match (scheme, host and port; case and a trailing slash in the config aside), or "*". */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return false;
  const wanted = origin.toLowerCase();
  return allowed.some((a) => a === '*' || a.toLowerCase().replace(/\/+$/, '') === wanted);
}

function hostRefused(foreign: ForeignHost): GatewayError {
  const shown = foreign.value?.slice(0, 100);
  const named =
    shown === undefined ? `a request without a usable ${foreign.header} header` : `\`${foreign.header}: ${shown}\``;
  const name = authorityHostname(foreign.value);
  const allow =
    name === undefined
      ? 'list the name clients use in allowed_hosts'
      : `add it to the config (allowed_hosts: ["${name.slice(0, 100)}"])`;
  return new GatewayError({
    status: 403,
    code: 'host_not_allowed',
    message:
      `This gateway is open (no api_key and no users), so it answers only requests addressed to this machine ` +
      `(localhost, an IP address, its hostname, host.docker.internal), and ${named} is not one: ` +
      'a web page that re-points its own name at this machine (DNS rebinding) looks like this. ' +
      `If that name is yours, ${allow}, ` +
      'or lock the gateway (set api_key, or create an admin user): a locked gateway answers any name.',
  });
}

function originRefused(origin: string | undefined): GatewayError {
  const shown = origin === undefined ? 'several values' : origin.slice(0, 100);
  // a sandboxed frame, a file:// page or a redirect has no origin of its own: listing "null"
  // would let every such page of every site in, so the answer does not suggest it
  const opaque = origin?.trim().toLowerCase() === 'null';
  const allow = opaque
    ? 'A sandboxed frame or a file:// page has no origin the gateway could trust; serve the page from a web ' +
      'origin and list that origin in cors_origins (e.g. ["http://localhost:3000"]), '
    : `List that origin in cors_origins (cors_origins: ["${shown.replace(/\/+$/, '')}"]) to let the page call ` +
      'the gateway, ';
  return new GatewayError({
    status: 403,
    code: 'origin_not_allowed',
    message:
      'This gateway is open (no api_key and no users), so it takes no request that changes something ' +
      `from a web page of another site (Origin: ${shown}). ${allow}` +
      'or lock the gateway (set api_key, or create an admin user).',
  });
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
}
