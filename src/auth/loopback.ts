/**
 * Loopback callers: the gateway's own host. While the gateway is bootstrap-open (no master
 * key, no users) only a local request may use the admin API and the console, and /metrics is
 * open to loopback callers by default. Callers are judged on fastify's `req.ip`, so with
 * `trust_proxy` it is the client behind the proxy, never the proxy itself.
 *
 * A loopback address alone is not enough for the open gateway: a page on another site can
 * make the browser reach 127.0.0.1 under its own name (DNS rebinding: `evil.example` resolved
 * to 127.0.0.1), with the browser's same-origin rules then letting it read the answers. Such a
 * request carries `Host: evil.example` (and, for a POST or a fetch, `Origin: http://evil.example`),
 * so `isLocalRequest` also wants the Host to name this host (localhost, 127.x, [::1]) and an
 * Origin, when one is sent, to be a loopback origin.
 */
import { isIPv4 } from 'node:net';

/** 127.0.0.0/8, ::1 and IPv4-mapped ::ffff:127.x.x.x (an IPv4 client on a dual-stack socket). */
export function isLoopbackIp(ip: string | undefined): boolean {
  if (!ip) return false;
  const addr = ip.trim().toLowerCase();
  if (addr === '::1') return true;
  const v4 = addr.startsWith('::ffff:') ? addr.slice('::ffff:'.length) : addr;
  return isIPv4(v4) && v4.startsWith('127.');
}

/** Whether a listen address binds loopback only (`localhost` too); `0.0.0.0`, `::` or a LAN address do not. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || isLoopbackIp(h);
}

/** The headers `isLocalRequest` reads (fastify's `req.headers` fits). */
export interface LocalRequestHeaders {
  host?: string | string[];
  origin?: string | string[];
  'x-forwarded-host'?: string | string[];
  [name: string]: unknown;
}

/**
 * A request from this host addressed to this host: a loopback client address, a Host header
 * naming localhost / 127.x / [::1] (any port; a forwarded host, when a proxy sent one, too),
 * and no Origin unless a loopback one. Anything missing or unparseable counts as remote.
 */
export function isLocalRequest(ip: string | undefined, headers: LocalRequestHeaders | undefined): boolean {
  if (!isLoopbackIp(ip) || !headers) return false;
  if (!isLoopbackAuthority(single(headers.host))) return false;
  const forwarded = headers['x-forwarded-host'];
  if (forwarded !== undefined && !isLoopbackAuthority(single(forwarded)?.split(',')[0])) return false;
  const origin = headers.origin;
  return origin === undefined || isLoopbackOrigin(single(origin));
}

/** `localhost:8080`, `127.0.0.1`, `[::1]:3000` (a Host header's value). */
export function isLoopbackAuthority(authority: string | undefined): boolean {
  const value = authority?.trim();
  if (!value || /[/?#@\\\s]/.test(value)) return false;
  return isLoopbackUrl(`http://${value}`);
}

/** `http://localhost:8080`, `https://127.0.0.1`; `null` (an opaque origin) is not. */
export function isLoopbackOrigin(origin: string | undefined): boolean {
  const value = origin?.trim();
  if (!value || !/^https?:\/\//i.test(value)) return false;
  return isLoopbackUrl(value);
}

function isLoopbackUrl(text: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(text).hostname.toLowerCase();
  } catch {
    return false;
  }
  return isLoopbackHost(hostname);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
}
