/**
 * The address guard for URLs clients hand in (inputs/fetch.ts).
 *
 * With `allowPrivate` false, the address actually connected to is checked, not the host name
 * (a name may resolve to 127.0.0.1, or change between a check and the connect: DNS
 * rebinding): the agent's connector resolves names itself with node:dns, drops loopback,
 * private, link-local, CGNAT, unique-local, multicast and reserved addresses (also inside
 * IPv4-mapped / IPv4-translated / NAT64 / 6to4 IPv6; local-use NAT64 `64:ff9b:1::/48` and
 * Teredo `2001::/32` outright: where they lead cannot be told from the address) before
 * connecting, refuses IP literals of those without connecting, and checks the connected
 * socket's remote address once more.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type Socket } from 'node:net';
import { Agent, buildConnector } from 'undici';

// ---------------------------------------------------------------------------------------------
// Address classification

/**
 * Why `address` (an IPv4 or IPv6 literal, brackets and zone allowed) may not be fetched with
 * allowPrivate off; undefined = public.
 */
export function addressRefusal(address: string): string | undefined {
  let ip = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const zone = ip.indexOf('%');
  if (zone >= 0) ip = ip.slice(0, zone);
  const family = isIP(ip);
  if (family === 4) return v4Refusal(ip.split('.').map(Number));
  if (family === 6) return v6Refusal(ipv6Groups(ip));
  return 'not an IP address';
}

export function isPublicAddress(address: string): boolean {
  return addressRefusal(address) === undefined;
}

function v4Refusal([a, b, c]: number[]): string | undefined {
  if (a === 0) return 'an unspecified ("this network") address';
  if (a === 127) return 'a loopback address';
  if (a === 10 || (a === 172 && (b & 0xf0) === 16) || (a === 192 && b === 168)) return 'a private address';
  if (a === 100 && (b & 0xc0) === 64) return 'a carrier-grade NAT address';
  if (a === 169 && b === 254) return 'a link-local address';
  if ((a === 192 && b === 0 && c === 0) || (a === 198 && (b & 0xfe) === 18)) return 'a reserved address';
  if (a >= 224 && a < 240) return 'a multicast address';
  if (a >= 240) return 'a reserved address';
  return undefined;
}

function v6Refusal(g: number[]): string | undefined {
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  const embedded = (hi: number, lo: number) => v4Refusal([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  if (zeroTo(8)) return 'an unspecified address';
  if (zeroTo(7) && g[7] === 1) return 'a loopback address';
  if (zeroTo(5) && g[5] === 0xffff) return embedded(g[6], g[7]); // ::ffff:a.b.c.d
  if (zeroTo(4) && g[4] === 0xffff && g[5] === 0) return embedded(g[6], g[7]); // ::ffff:0:a.b.c.d (IPv4-translated)
  if (zeroTo(6)) return embedded(g[6], g[7]); // ::a.b.c.d (deprecated IPv4-compatible)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return embedded(g[6], g[7]); // NAT64
  // 64:ff9b:1::/48, a site's own translator
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return 'a local-use NAT64 address';
  // 2001::/32: tunnels to an IPv4 the address hides (obfuscated)
  if (g[0] === 0x2001 && g[1] === 0) return 'a Teredo address';
  if (g[0] === 0x2002) return embedded(g[1], g[2]); // 6to4
  if ((g[0] & 0xfe00) === 0xfc00) return 'a unique-local address';
  if ((g[0] & 0xffc0) === 0xfe80) return 'a link-local address';
  if ((g[0] & 0xffc0) === 0xfec0) return 'a site-local address';
  if ((g[0] & 0xff00) === 0xff00) return 'a multicast address';
  return undefined;
}

/** The eight 16-bit groups of an IPv6 literal net.isIP accepted (`::` expanded, a trailing dotted quad folded in). */
function ipv6Groups(ip: string): number[] {
  let text = ip;
  const last = text.lastIndexOf(':');
  if (text.indexOf('.', last) >= 0) {
    const [a, b, c, d] = text
      .slice(last + 1)
      .split('.')
      .map(Number);
    text = `${text.slice(0, last + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (s: string | undefined) => (s ? s.split(':').map((h) => parseInt(h, 16)) : []);
  const hi = parse(head);
  const lo = parse(tail);
  return tail === undefined ? hi : [...hi, ...new Array<number>(8 - hi.length - lo.length).fill(0), ...lo];
}

// ---------------------------------------------------------------------------------------------
// The guarded agent

/** A connection refused by the address guard (before connecting, or right after). */
export class AddressRefused extends Error {
  constructor(
    readonly host: string,
    readonly why: string,
    readonly literal: boolean,
  ) {
    super(`${host} ${literal ? 'is' : 'resolves only to'} ${why}`);
    this.name = 'AddressRefused';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A resolver with node:dns `lookup`'s all-addresses form (tests inject one). */
export type Resolver = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** net.connect's `lookup`: resolve every address, keep only those the guard allows. */
function guardedLookup(resolve: Resolver) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const allowed = addresses.filter((a) => addressRefusal(a.address) === undefined);
      if (allowed.length === 0) {
        const why = addresses.length ? addressRefusal(addresses[0].address)! : 'no address';
        return callback(Object.assign(new AddressRefused(hostname, why, false), { code: 'EADDRREFUSED' }), '');
      }
      if (options.all) callback(null, allowed);
      else callback(null, allowed[0].address, allowed[0].family);
    });
  };
}

/**
 * An undici connector that only connects to public addresses: host names are resolved here
 * and filtered, IP literals are refused without connecting, and the connected socket's remote
 * address is checked once more.
 */
export function createGuardedConnector(opts: { resolve?: Resolver } = {}): buildConnector.connector {
  const resolve = opts.resolve ?? (dnsLookup as unknown as Resolver);
  const base = buildConnector({ lookup: guardedLookup(resolve) } as buildConnector.BuildOptions);
  return (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    const literalWhy = isIP(host) ? addressRefusal(host) : undefined;
    if (literalWhy) return callback(new AddressRefused(host, literalWhy, true), null);
    base(options, (err, socket) => {
      if (err) return callback(err, null);
      const remote = (socket as Socket).remoteAddress;
      const why = remote === undefined ? 'an unknown address' : addressRefusal(remote);
      if (why) {
        socket!.destroy();
        return callback(new AddressRefused(host, why, isIP(host) !== 0), null);
      }
      callback(null, socket!);
    });
  };
}

/**
 * An undici Agent for client-supplied URLs; with `allowPrivate: false` every connection goes
 * through createGuardedConnector.
 */
export function createRefAgent(opts: { allowPrivate: boolean; resolve?: Resolver }): Agent {
  if (opts.allowPrivate) return new Agent({ keepAliveTimeout: 4_000 });
  return new Agent({ connect: createGuardedConnector({ resolve: opts.resolve }), keepAliveTimeout: 4_000 });
}

const agents: { open?: Agent; guarded?: Agent } = {};

export function defaultAgent(allowPrivate: boolean): Agent {
  return allowPrivate
    ? (agents.open ??= createRefAgent({ allowPrivate: true }))
    : (agents.guarded ??= createRefAgent({ allowPrivate: false }));
}
