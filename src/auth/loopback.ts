/**
 * Loopback addresses: the gateway's own host. While the gateway is bootstrap-open (no master
 * key, no users) only loopback callers may use the admin API, and /metrics is open to them by
 * default. Callers are judged on fastify's `req.ip`, so with `trust_proxy` it is the client
 * behind the proxy, never the proxy itself.
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
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || isLoopbackIp(h);
}
