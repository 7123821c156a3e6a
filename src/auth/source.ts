/**
 * Attribution of a call ("source", pure): the user, else the client's `X-Source` header,
 * else the client IP — IPv4 as is, IPv6 folded to its /64 (one host rotates addresses within
 * it) — shown through its IP alias when one exists.
 */
import { isIPv4, isIPv6 } from 'node:net';

const MAX_SOURCE_LENGTH = 64;

export interface SourceInput {
  /** Name of the authenticated user, if any. */
  user?: string;
  /** The `X-Source` request header, if any. */
  header?: string | string[];
  /** Socket (or trusted-proxy) address of the client. */
  ip: string;
  /** Aliases keyed by IP or by `<prefix>::/64`. */
  ipAliases: Readonly<Record<string, string>>;
}

export function attributeSource(input: SourceInput): string {
  if (input.user) return input.user;
  const header = sanitize(Array.isArray(input.header) ? input.header[0] : input.header);
  if (header) return header;
  const ip = stripZone(input.ip.trim());
  const folded = foldIp(ip);
  return aliasOf(input.ipAliases, ip) ?? aliasOf(input.ipAliases, folded) ?? folded;
}

/**
 * The form an IP is attributed under: IPv4 unchanged, IPv4-mapped IPv6 as IPv4, other IPv6
 * as its /64 prefix (`2001:db8:1:2::/64`). Anything unparseable is returned unchanged.
 */
export function foldIp(ip: string): string {
  if (isIPv4(ip)) return ip;
  const hextets = isIPv6(ip) ? expandIPv6(ip) : undefined;
  if (!hextets) return ip;
  if (hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff) {
    return [hextets[6] >> 8, hextets[6] & 0xff, hextets[7] >> 8, hextets[7] & 0xff].join('.');
  }
  const prefix = hextets.slice(0, 4);
  while (prefix.length > 0 && prefix[prefix.length - 1] === 0) prefix.pop();
  return `${prefix.map((h) => h.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (embedded IPv4 tail included). */
function expandIPv6(ip: string): number[] | undefined {
  let text = ip;
  const v4Tail = text.match(/(\d+\.\d+\.\d+\.\d+)$/)?.[1];
  if (v4Tail) {
    const [a, b, c, d] = v4Tail.split('.').map(Number);
    text = `${text.slice(0, -v4Tail.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (part: string | undefined) => (part ? part.split(':').map((h) => parseInt(h, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  const missing = 8 - left.length - right.length;
  const groups = tail === undefined ? left : [...left, ...Array<number>(missing).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

function stripZone(ip: string): string {
  const percent = ip.indexOf('%');
  return percent === -1 ? ip : ip.slice(0, percent);
}

function aliasOf(aliases: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(aliases, key) ? aliases[key] : undefined;
}

/** A client-chosen label: trimmed, control characters removed, length-capped. */
function sanitize(value: string | undefined): string | undefined {
  // eslint-disable-next-line no-control-regex
  const clean = value
    ?.replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .slice(0, MAX_SOURCE_LENGTH);
  return clean ? clean : undefined;
}
