/**
 * The cluster part of config.yaml (`cluster: {redis_url, instance_id?, advertise_url?,
 * lease_ttl_s?}`): several gateways sharing one scheduler through Redis. Absent = a single
 * gateway on SQLite alone. Only config.yaml sets it, and only at start-up (the URL may hold a
 * password, which the store's settings would keep in clear).
 */
import { isObject } from '../json.ts';
import { childPath, type ConfigProblem } from './problems.ts';

export const CLUSTER_DEFAULTS = Object.freeze({
  /** Seconds a slot lease lives unless its holder refreshes it (every third of this). */
  lease_ttl_s: 6,
});

const clusterSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['redis_url'],
  properties: {
    redis_url: { type: 'string', minLength: 1, hint: 'must be a redis:// or rediss:// URL' },
    instance_id: {
      type: 'string',
      pattern: '^[A-Za-z0-9._-]{1,64}$',
      hint: 'must be 1-64 letters, digits, dots, dashes or underscores',
    },
    advertise_url: { type: 'string', minLength: 1, hint: 'must be the http(s) URL other instances reach this one at' },
    lease_ttl_s: { type: 'number', minimum: 2, maximum: 120, default: CLUSTER_DEFAULTS.lease_ttl_s },
  },
  hint: 'must be {redis_url, instance_id?, advertise_url?, lease_ttl_s?}',
} as const;

export const clusterTopLevelProperties = { cluster: clusterSchema };

/** `cluster.redis_url` must be redis:// or rediss://; `advertise_url` http(s). Messages never quote the URL. */
export function clusterProblems(raw: unknown): ConfigProblem[] {
  if (!isObject(raw)) return [];
  const problems: ConfigProblem[] = [];
  const redis = urlOf(raw.redis_url);
  if (typeof raw.redis_url === 'string' && (!redis || !['redis:', 'rediss:'].includes(redis.protocol))) {
    problems.push({ path: childPath('cluster', 'redis_url'), message: 'must be a redis:// or rediss:// URL' });
  }
  const advertised = urlOf(raw.advertise_url);
  if (typeof raw.advertise_url === 'string' && (!advertised || !['http:', 'https:'].includes(advertised.protocol))) {
    problems.push({ path: childPath('cluster', 'advertise_url'), message: 'must be an http:// or https:// URL' });
  }
  return problems;
}

function urlOf(value: unknown): URL | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}
