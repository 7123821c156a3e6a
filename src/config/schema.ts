/**
 * Validates a parsed (and interpolated) config.yaml into a `GatewayConfig`: JSON Schema
 * through ajv (types, unknown keys, defaults), then the checks a schema cannot express
 * (duplicate backend names, URL shape, aliases naming unknown backends). Every problem is
 * reported at once, each with the key path it is about. The media keys (image_models, gpu_groups,
 * the comfyui-only backend options) are described in media-schema.ts.
 */
import { Ajv } from 'ajv';
import { problemFromAjv, uniqueProblems } from './ajv-problems.ts';
import { alertsProblems, alertsTopLevelProperties } from './alerts-schema.ts';
import { clusterProblems, clusterTopLevelProperties } from './cluster-schema.ts';
import { keyPoolProblems, keyPoolProperties } from './key-pool-schema.ts';
import { isObject as isPlainObject } from '../json.ts';
import { BACKEND_DEFAULTS, DEFAULTS } from './defaults.ts';
import {
  COMFY_ONLY,
  imageModelsProblems,
  mediaBackendProperties,
  mediaTopLevelProperties,
  type ImageModelsSource,
} from './media-schema.ts';
import { childPath, type ConfigProblem } from './problems.ts';
import type { BackendSpec, GatewayConfig } from './types.ts';
import { ruleProblems } from './reasoning-rule-problems.ts';
import { samplingProblems } from './sampling-problems.ts';
import { wakeBackendProperties, wakeProblems } from './wake-schema.ts';

export { childPath, type ConfigProblem } from './problems.ts';

export type ValidationResult = { ok: true; config: GatewayConfig } | { ok: false; problems: ConfigProblem[] };
export type BackendValidationResult = { ok: true; spec: BackendSpec } | { ok: false; problems: ConfigProblem[] };

/** Renders problems one per line, for a log line or a start-up error. */
export function formatProblems(problems: readonly ConfigProblem[]): string {
  return problems.map((p) => `  - ${p.path || '(top level)'}: ${p.message}`).join('\n');
}

const nonNegativeNumber = { type: 'number', minimum: 0 } as const;
const nonNegativeInteger = { type: 'integer', minimum: 0 } as const;
const secret = {
  type: 'string',
  minLength: 1,
  hint: 'must be a non-empty string (leave the key out for none)',
} as const;

/** One model's prices, USD per million tokens (`cache_*` absent: billed at `input`). */
const modelPricingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['input', 'output'],
  properties: {
    input: nonNegativeNumber,
    output: nonNegativeNumber,
    cache_read: nonNegativeNumber,
    cache_write: nonNegativeNumber,
  },
  hint: 'must be {input, output, cache_read?, cache_write?} in USD per million tokens',
} as const;

const backendSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'url'],
  properties: {
    name: {
      type: 'string',
      pattern: '^[A-Za-z0-9._-]+$',
      hint: "must be non-empty and use only letters, digits, '.', '_' and '-'",
    },
    url: { type: 'string', minLength: 1 },
    type: { enum: ['openai', 'ollama', 'anthropic', 'comfyui'], default: BACKEND_DEFAULTS.type },
    enabled: { type: 'boolean', default: BACKEND_DEFAULTS.enabled },
    api_key: secret,
    ...keyPoolProperties,
    max_concurrent: nonNegativeInteger,
    resident: { type: 'integer', minimum: 1 },
    paid: { type: 'boolean', default: BACKEND_DEFAULTS.paid },
    local: { type: 'boolean', default: BACKEND_DEFAULTS.local },
    chat_only: { type: 'boolean', default: BACKEND_DEFAULTS.chat_only },
    serverless_only: { type: 'boolean', default: BACKEND_DEFAULTS.serverless_only },
    host: { type: 'string', minLength: 1 },
    auth_mode: { enum: ['api_key', 'subscription'] },
    models: { type: 'array', items: { type: 'string', minLength: 1 }, hint: 'must be a list of model ids' },
    prompt_cache: { type: 'boolean' },
    responses: { enum: ['native', 'translate'] },
    sampling_defaults: { type: 'object', hint: 'must be a map of request field to default value' },
    reasoning_as_content: { enum: ['think_tags'] },
    pricing: {
      type: 'object',
      propertyNames: { minLength: 1 },
      additionalProperties: modelPricingSchema,
      hint:
        'must be a map of model id or glob pattern to {input, output, cache_read?, cache_write?} ' +
        '(USD per million tokens)',
    },
    ...mediaBackendProperties,
    ...wakeBackendProperties,
  },
} as const;

const aliasDefaultsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    reasoning: { enum: ['on', 'off', 'auto'] },
    sampling_defaults: { type: 'object', hint: 'must be a map of request field to default value' },
    voice: { type: 'string', minLength: 1 },
    spill_after_s: { type: 'number', minimum: 0 },
  },
} as const;

/** JSON Schema of config.yaml (after interpolation; null-valued keys already removed). */
export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    api_key: secret,
    store_dir: { type: 'string', minLength: 1, default: DEFAULTS.store_dir },
    jobs_dir: { type: 'string', minLength: 1, default: DEFAULTS.jobs_dir },
    backup_dir: { type: 'string', minLength: 1 },
    log_level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace'], default: DEFAULTS.log_level },
    log_format: { enum: ['auto', 'pretty', 'json'], default: DEFAULTS.log_format },
    health_check_interval: { type: 'number', exclusiveMinimum: 0, default: DEFAULTS.health_check_interval },
    model_prefix: { type: 'boolean', default: DEFAULTS.model_prefix },
    max_concurrent: { ...nonNegativeInteger, default: DEFAULTS.max_concurrent },
    backends: { type: 'array', items: backendSchema, default: [] },
    virtual_models: {
      type: 'object',
      default: {},
      additionalProperties: {
        type: ['string', 'object'],
        minLength: 1,
        minProperties: 1,
        additionalProperties: { type: 'string', minLength: 1 },
        hint: 'must be a model id, or a map of backend name to model id',
      },
    },
    park_timeout_s: { ...nonNegativeNumber, default: DEFAULTS.park_timeout_s },
    alias_park: { type: 'object', default: {}, additionalProperties: nonNegativeNumber },
    alias_defaults: { type: 'object', default: {}, additionalProperties: aliasDefaultsSchema },
    max_parked: { ...nonNegativeInteger, default: DEFAULTS.max_parked },
    affinity_max_wait_s: { ...nonNegativeNumber, default: DEFAULTS.affinity_max_wait_s },
    spill_after_s: { ...nonNegativeNumber, default: DEFAULTS.spill_after_s },
    paid_budget_usd_month: { ...nonNegativeNumber, default: DEFAULTS.paid_budget_usd_month },
    affinity_ttl_s: { ...nonNegativeNumber, default: DEFAULTS.affinity_ttl_s },
    fast_probe_interval_s: { ...nonNegativeNumber, default: DEFAULTS.fast_probe_interval_s },
    stream_idle_timeout_s: { ...nonNegativeNumber, default: DEFAULTS.stream_idle_timeout_s },
    client_stall_timeout_s: { ...nonNegativeNumber, default: DEFAULTS.client_stall_timeout_s },
    first_byte_timeout_s: { ...nonNegativeNumber, default: DEFAULTS.first_byte_timeout_s },
    request_timeout_s: { ...nonNegativeNumber, default: DEFAULTS.request_timeout_s },
    stream_keepalive_s: { ...nonNegativeNumber, default: DEFAULTS.stream_keepalive_s },
    failure_threshold: { type: 'integer', minimum: 1, default: DEFAULTS.failure_threshold },
    metrics_access: { enum: ['loopback', 'open', 'key'], default: DEFAULTS.metrics_access },
    retention_days: { ...nonNegativeNumber, default: DEFAULTS.retention_days },
    capture_bodies: { type: 'boolean', default: DEFAULTS.capture_bodies },
    body_retention_days: { ...nonNegativeNumber, default: DEFAULTS.body_retention_days },
    stats_flush_ms: { type: 'integer', minimum: 1, default: DEFAULTS.stats_flush_ms },
    call_log: { type: 'boolean', default: DEFAULTS.call_log },
    trust_proxy: {
      type: ['boolean', 'string', 'array'],
      items: { type: 'string', minLength: 1 },
      default: DEFAULTS.trust_proxy,
      hint: 'must be true/false, or an address/CIDR (or a list of them)',
    },
    cors_origins: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    ready_requires_backend: { type: 'boolean', default: DEFAULTS.ready_requires_backend },
    allowed_hosts: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    request_body_timeout_s: { ...nonNegativeNumber, default: DEFAULTS.request_body_timeout_s },
    expose_backend_names: {
      enum: ['auto', true, false],
      default: DEFAULTS.expose_backend_names,
      hint: 'must be auto, true or false',
    },
    // each rule is checked by ruleProblems (bridges/reasoning), which knows every mechanism's params
    reasoning_rules: {
      type: 'array',
      default: [],
      hint: 'must be a list of rules ({model, mechanism, backends?, params?, enabled?})',
    },
    async_park_timeout_s: { ...nonNegativeNumber, default: DEFAULTS.async_park_timeout_s },
    responses_ttl_h: { type: 'number', exclusiveMinimum: 0, default: DEFAULTS.responses_ttl_h },
    ...mediaTopLevelProperties,
    ...alertsTopLevelProperties,
    ...clusterTopLevelProperties,
  },
} as const;

/** Old key names still accepted, each read as its new name by `validate`; never documented. */
const DEPRECATED_KEYS: ReadonlyMap<string, keyof GatewayConfig> = new Map([
  ['upstream_timeout_s', 'request_timeout_s'],
]);

/** Every top-level key config.yaml may have. */
export const TOP_LEVEL_KEYS: readonly (keyof GatewayConfig)[] = Object.freeze(
  Object.keys(configSchema.properties) as (keyof GatewayConfig)[],
);

/** A compiled validator. Build one per app (ajv compilation is the costly part). */
export interface ConfigValidator {
  /**
   * Validates `raw`, which it mutates: null-valued keys are dropped (= not set), defaults
   * filled in, trailing slashes stripped from backend URLs. `source: 'store'` checks
   * `image_models` as a stored value (workflow_json required; no workflow files).
   */
  validate(raw: unknown, opts?: { source?: ImageModelsSource }): ValidationResult;
  /**
   * Validates one backend on its own (e.g. from the console before it is stored), with the
   * same rules and defaults as a `backends[]` entry; paths are relative (`url`).
   */
  validateBackend(raw: unknown): BackendValidationResult;
}

export function createConfigValidator(): ConfigValidator {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, verbose: true, allowUnionTypes: true });
  ajv.addKeyword({ keyword: 'hint', schemaType: 'string' });
  const check = ajv.compile(configSchema);
  const checkBackend = ajv.compile(backendSchema);
  return {
    validate(raw, opts = {}) {
      dropNullValuedKeys(raw);
      renameDeprecatedKeys(raw);
      const schemaProblems = check(raw) ? [] : (check.errors ?? []).map(problemFromAjv);
      const problems = [...uniqueProblems(schemaProblems), ...semanticProblems(raw, opts.source ?? 'file')];
      if (problems.length > 0) return { ok: false, problems };
      const config = raw as GatewayConfig;
      for (const b of config.backends) b.url = b.url.replace(/\/+$/, '');
      return { ok: true, config };
    },
    validateBackend(raw) {
      if (isPlainObject(raw)) deleteNulls(raw);
      const problems = checkBackend(raw) ? [] : uniqueProblems((checkBackend.errors ?? []).map(problemFromAjv));
      if (isPlainObject(raw) && typeof raw.url === 'string' && raw.url) {
        const message = urlProblem(raw.url);
        if (message) problems.push({ path: 'url', message });
      }
      if (isPlainObject(raw)) problems.push(...backendKindProblems(raw, ''));
      if (isPlainObject(raw) && raw.sampling_defaults !== undefined)
        problems.push(...samplingProblems(raw.sampling_defaults, 'sampling_defaults'));
      if (problems.length > 0) return { ok: false, problems };
      const spec = raw as unknown as BackendSpec;
      spec.url = spec.url.replace(/\/+$/, '');
      return { ok: true, spec };
    },
  };
}

/** Validates with a fresh validator (convenient; prefer a shared `createConfigValidator()` when validating often). */
export function validateConfig(raw: unknown): ValidationResult {
  return createConfigValidator().validate(raw);
}

/**
 * `key:` with nothing after it (null) means "not set": this lets a section whose entries are
 * all commented out, or `api_key: ${KEY:-}`, fall back to the default.
 */
function dropNullValuedKeys(raw: unknown): void {
  if (!isPlainObject(raw)) return;
  deleteNulls(raw);
  if (Array.isArray(raw.backends)) for (const b of raw.backends) if (isPlainObject(b)) deleteNulls(b);
}

/** An old key name counts as its new one, unless the new one is set too (then the new one wins). */
function renameDeprecatedKeys(raw: unknown): void {
  if (!isPlainObject(raw)) return;
  for (const [old, current] of DEPRECATED_KEYS) {
    if (!Object.hasOwn(raw, old)) continue;
    if (!Object.hasOwn(raw, current)) raw[current] = raw[old];
    delete raw[old];
  }
}

function deleteNulls(obj: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(obj)) if (v === null) delete obj[k];
}

/** Checks a JSON Schema cannot express. Defensive: `raw` may be invalid in other ways. */
function semanticProblems(raw: unknown, source: ImageModelsSource): ConfigProblem[] {
  if (!isPlainObject(raw)) return [];
  const problems: ConfigProblem[] = [];
  const backends = Array.isArray(raw.backends) ? raw.backends : [];
  const names = new Map<string, number>();
  const types = new Map<string, string>();
  backends.forEach((b, i) => {
    if (!isPlainObject(b)) return;
    if (typeof b.name === 'string') {
      const first = names.get(b.name);
      if (first !== undefined) {
        problems.push({
          path: childPath(childPath('backends', i), 'name'),
          message: `duplicate backend name "${b.name}" (also backends[${first}])`,
        });
      } else names.set(b.name, i);
      if (!types.has(b.name)) types.set(b.name, String(b.type ?? BACKEND_DEFAULTS.type));
    }
    if (typeof b.url === 'string' && b.url) {
      const message = urlProblem(b.url);
      if (message) problems.push({ path: childPath(childPath('backends', i), 'url'), message });
    }
    problems.push(...backendKindProblems(b, childPath('backends', i)));
    if (b.sampling_defaults !== undefined)
      problems.push(...samplingProblems(b.sampling_defaults, childPath(childPath('backends', i), 'sampling_defaults')));
  });
  if (Array.isArray(raw.reasoning_rules)) problems.push(...ruleProblems(raw.reasoning_rules, 'reasoning_rules'));
  if (isPlainObject(raw.alias_defaults)) {
    for (const [alias, d] of Object.entries(raw.alias_defaults)) {
      if (isPlainObject(d) && d.sampling_defaults !== undefined) {
        problems.push(
          ...samplingProblems(d.sampling_defaults, childPath(childPath('alias_defaults', alias), 'sampling_defaults')),
        );
      }
    }
  }
  problems.push(...imageModelsProblems(raw.image_models, types, source), ...alertsProblems(raw.alerts));
  problems.push(...clusterProblems(raw.cluster));
  if (isPlainObject(raw.virtual_models)) {
    for (const [alias, target] of Object.entries(raw.virtual_models)) {
      if (!isPlainObject(target)) continue;
      for (const backend of Object.keys(target)) {
        if (names.has(backend)) continue;
        const known = [...names.keys()].join(', ') || 'none';
        problems.push({
          path: childPath(childPath('virtual_models', alias), backend),
          message: `names no backend in backends[] (known: ${known})`,
        });
      }
    }
  }
  return problems;
}

/** Options that only one kind of backend understands, set on another kind. */
function backendKindProblems(b: Record<string, unknown>, path: string): ConfigProblem[] {
  const type = b.type ?? BACKEND_DEFAULTS.type;
  const problems: ConfigProblem[] = keyPoolProblems(b, path);
  if (b.auth_mode !== undefined && type !== 'anthropic') {
    problems.push({ path: childPath(path, 'auth_mode'), message: 'only backends of type anthropic have an auth_mode' });
  }
  if (b.auth_mode === 'subscription' && b.api_key === undefined && b.api_keys === undefined && b.enabled !== false) {
    problems.push({
      path: childPath(path, 'api_key'),
      message: 'auth_mode subscription needs the token from `claude setup-token` as api_key',
    });
  }
  for (const key of COMFY_ONLY) {
    if (b[key] !== undefined && type !== 'comfyui')
      problems.push({ path: childPath(path, key), message: 'only backends of type comfyui have this option' });
  }
  if (b.pricing !== undefined && type === 'comfyui') {
    const message = 'only LLM backends (types openai and anthropic) are priced per token';
    problems.push({ path: childPath(path, 'pricing'), message });
  }
  if (b.resident !== undefined && type !== 'openai' && type !== 'ollama') {
    const message = 'only backends of type openai or ollama hold models loaded';
    problems.push({ path: childPath(path, 'resident'), message });
  }
  problems.push(...wakeProblems(b, path));
  if (b.prompt_cache !== undefined && type !== 'openai' && type !== 'ollama') {
    problems.push({
      path: childPath(path, 'prompt_cache'),
      message: 'only backends of type openai translate cache_control (anthropic backends get it as sent)',
    });
  }
  return problems;
}

/** Why a backend URL is unusable, or undefined when it is fine. */
export function urlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `"${url}" is not a URL (write e.g. http://10.0.0.5:8080)`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return `must be an http:// or https:// URL, got "${url}"`;
  if (/\/v1\/?$/.test(parsed.pathname))
    return `must not end in /v1 (the gateway adds it): write "${url.replace(/\/v1\/?$/, '')}"`;
  if (parsed.search || parsed.hash) return 'must not have a query string or fragment';
  return undefined;
}
