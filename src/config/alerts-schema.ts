/**
 * The alerts part of config.yaml (`alerts: [{url, events, format, min_interval_s}]`): the
 * events the gateway can raise, the JSON Schema fragment schema.ts puts in place, and the checks
 * a schema cannot express (the URL's shape). A URL's userinfo and path may hold a webhook's
 * secret, so no problem message repeats it.
 */
import { isObject } from '../json.ts';
import { ALERT_DEFAULTS } from './defaults.ts';
import { childPath, type ConfigProblem } from './problems.ts';
import type { AlertEventName } from './types.ts';

/** Every event an alert target may ask for; a target without `events` gets them all. */
export const ALERT_EVENTS = [
  'backend_down',
  'backend_up',
  'credential_rejected',
  'quota_reached',
  'paid_budget_reached',
  'job_failed',
  'gateway_started',
] as const;

export const ALERT_FORMATS = ['json', 'ntfy', 'discord', 'slack'] as const;

const alertTargetSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: { type: 'string', minLength: 1, hint: 'must be the http(s) URL alerts are POSTed to' },
    events: {
      type: 'array',
      minItems: 1,
      items: { enum: ALERT_EVENTS, hint: `must be one of ${ALERT_EVENTS.join(', ')}` },
      hint: 'must be a non-empty list of events (leave the key out for all of them)',
    },
    format: { enum: ALERT_FORMATS, default: ALERT_DEFAULTS.format, hint: `must be one of ${ALERT_FORMATS.join(', ')}` },
    min_interval_s: { type: 'number', minimum: 0, default: ALERT_DEFAULTS.min_interval_s },
  },
  hint: 'must be {url, events?, format?, min_interval_s?}',
} as const;

/** The top-level key, for schema.ts. */
export const alertsTopLevelProperties = {
  alerts: { type: 'array', default: [], items: alertTargetSchema, hint: 'must be a list of alert targets' },
} as const;

/** `alerts[i].url` must be an http(s) URL without a fragment; the message never quotes it. */
export function alertsProblems(raw: unknown): ConfigProblem[] {
  if (!Array.isArray(raw)) return [];
  const problems: ConfigProblem[] = [];
  raw.forEach((target, i) => {
    if (!isObject(target) || typeof target.url !== 'string' || !target.url) return;
    const message = alertUrlProblem(target.url);
    if (message) problems.push({ path: childPath(childPath('alerts', i), 'url'), message });
  });
  return problems;
}

function alertUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL (write e.g. https://ntfy.sh/my-topic)';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'must be an http:// or https:// URL';
  if (parsed.hash) return 'must not have a fragment';
  return undefined;
}

/** ALERT_EVENTS and types.ts' AlertEventName name the same events (a compile-time check). */
export type AlertEventsMatch = [(typeof ALERT_EVENTS)[number]] extends [AlertEventName]
  ? [AlertEventName] extends [(typeof ALERT_EVENTS)[number]]
    ? true
    : never
  : never;
const eventsMatch: AlertEventsMatch = true;
void eventsMatch;
