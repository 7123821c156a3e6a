/**
 * A backend's Wake-on-LAN keys (`wake: {mac, address, port, boot_timeout_s, cooldown_s}` and
 * `idle_sleep: {after_s, url, method}`): the JSON Schema fragment schema.ts spreads into a
 * backend's properties, the checks a schema cannot express (the address's shape, idle_sleep
 * without wake, the URL), and the settings with their defaults filled in. The sleep URL may hold
 * a token, so no message repeats it.
 */
import { isIP } from 'node:net';
import { isObject } from '../json.ts';
import { WAKE_DEFAULTS } from './defaults.ts';
import { childPath, type ConfigProblem } from './problems.ts';
import type { BackendSpec, IdleSleepSpec } from './types.ts';

/** aa:bb:cc:dd:ee:ff or aa-bb-cc-dd-ee-ff (one separator throughout), either case. */
export const MAC_PATTERN = '^[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\\1[0-9A-Fa-f]{2}){4}$';

const port = { type: 'integer', minimum: 1, maximum: 65535, hint: 'must be a UDP port, 1 to 65535' } as const;

const wakeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['mac'],
  properties: {
    mac: { type: 'string', pattern: MAC_PATTERN, hint: 'must be a MAC address like aa:bb:cc:dd:ee:ff' },
    address: { type: 'string', minLength: 1, hint: 'must be an IPv4 or IPv6 address or a host name' },
    port,
    boot_timeout_s: { type: 'number', exclusiveMinimum: 0 },
    cooldown_s: { type: 'number', minimum: 0 },
  },
  hint: 'must be {mac, address?, port?, boot_timeout_s?, cooldown_s?}',
} as const;

const idleSleepSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['after_s', 'url'],
  properties: {
    after_s: { type: 'number', exclusiveMinimum: 0 },
    url: { type: 'string', minLength: 1, hint: 'must be the http(s) URL that puts the box to sleep' },
    method: { enum: ['POST', 'GET', 'PUT'], hint: 'must be POST, GET or PUT' },
  },
  hint: 'must be {after_s, url, method?}',
} as const;

/** A backend's wake keys, for schema.ts's backend properties. */
export const wakeBackendProperties = { wake: wakeSchema, idle_sleep: idleSleepSchema } as const;

/** Problems of one backend's wake keys at `path` (`backends[2]`, or '' for a backend on its own). */
export function wakeProblems(b: Record<string, unknown>, path: string): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const wake = b.wake;
  if (isObject(wake) && typeof wake.address === 'string' && wake.address && !isAddress(wake.address)) {
    const message = 'must be an IPv4 or IPv6 address or a host name (e.g. 192.168.1.255)';
    problems.push({ path: childPath(childPath(path, 'wake'), 'address'), message });
  }
  const sleep = b.idle_sleep;
  if (sleep === undefined) return problems;
  if (wake === undefined) {
    const message = 'needs `wake` on the same backend (only a box the gateway woke is put back to sleep)';
    problems.push({ path: childPath(path, 'idle_sleep'), message });
  }
  if (isObject(sleep) && typeof sleep.url === 'string' && sleep.url && !isHttpUrl(sleep.url)) {
    problems.push({ path: childPath(childPath(path, 'idle_sleep'), 'url'), message: 'must be an http(s) URL' });
  }
  return problems;
}

/** An IP literal (v4 or v6) or a host name of letters, digits, '-' and '.'. */
export function isAddress(text: string): boolean {
  if (isIP(text) !== 0) return true;
  if (text.length > 253) return false;
  return text.split('.').every((label) => /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label));
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** A backend's wake settings, defaults filled in (milliseconds where named so). */
export interface WakeSettings {
  /** The six bytes of the MAC. */
  mac: Buffer;
  address: string;
  port: number;
  bootTimeoutMs: number;
  cooldownMs: number;
  idleSleep?: { afterMs: number; url: string; method: NonNullable<IdleSleepSpec['method']> };
}

/** The spec's wake settings; undefined without `wake` (or with a MAC that does not parse). */
export function wakeSettings(spec: Pick<BackendSpec, 'wake' | 'idle_sleep'>): WakeSettings | undefined {
  const wake = spec.wake;
  if (!wake || !new RegExp(MAC_PATTERN).test(wake.mac)) return undefined;
  const sleep = spec.idle_sleep;
  return {
    mac: Buffer.from(wake.mac.replace(/[:-]/g, ''), 'hex'),
    address: wake.address ?? WAKE_DEFAULTS.address,
    port: wake.port ?? WAKE_DEFAULTS.port,
    bootTimeoutMs: (wake.boot_timeout_s ?? WAKE_DEFAULTS.boot_timeout_s) * 1000,
    cooldownMs: (wake.cooldown_s ?? WAKE_DEFAULTS.cooldown_s) * 1000,
    ...(sleep
      ? {
          idleSleep: {
            afterMs: sleep.after_s * 1000,
            url: sleep.url,
            method: sleep.method ?? WAKE_DEFAULTS.idle_sleep_method,
          },
        }
      : {}),
  };
}
