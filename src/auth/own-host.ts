/**
 * The names and addresses this machine answers to, for the open gateway's Host rule (see
 * open-guard.ts): loopback (localhost, 127.x, [::1]), `os.hostname()` (its short form and
 * `<short>.local` too: names no web page can make resolve elsewhere) and every address of its
 * network interfaces (Debian maps the hostname to 127.0.1.1, which is loopback already). The
 * interface list is read again at most every REFRESH_MS: a DHCP lease may change it.
 */
import { hostname as osHostname, networkInterfaces } from 'node:os';
import { isLoopbackHost } from './loopback.ts';

const REFRESH_MS = 30_000;

export interface OwnHostSources {
  hostname: () => string;
  addresses: () => string[];
  now: () => number;
}

const SYSTEM: OwnHostSources = {
  hostname: osHostname,
  addresses: () => Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address)),
  now: () => Date.now(),
};

export class OwnHost {
  private names = new Set<string>();
  private addresses = new Set<string>();
  private readAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly sources: OwnHostSources = SYSTEM) {}

  /** Whether `host` (a bare hostname or address, no port or brackets) names this machine. */
  isOwnName(host: string): boolean {
    const h = normalise(host);
    if (isLoopbackHost(h)) return true;
    this.refresh();
    return this.names.has(h) || this.addresses.has(h);
  }

  /** Whether `ip` is one of this machine's addresses (a loopback one or an interface's). */
  isOwnAddress(ip: string | undefined): boolean {
    if (!ip) return false;
    const a = normalise(ip).replace(/^::ffff:(?=\d+\.)/, '');
    if (isLoopbackHost(a)) return true;
    this.refresh();
    return this.addresses.has(a);
  }

  private refresh(): void {
    const now = this.sources.now();
    if (now - this.readAt < REFRESH_MS) return;
    this.readAt = now;
    const full = normalise(this.sources.hostname());
    const short = full.split('.')[0];
    this.names = new Set([full, short, `${short}.local`].filter(Boolean));
    this.addresses = new Set(this.sources.addresses().map((a) => normalise(a.split('%')[0])));
  }
}

function normalise(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}
