/**
 * What an alert says: the event, its subject (a backend, a user, an alias), a line of detail and
 * when it happened, plus the words each format shows. Pure.
 */
import type { AlertEventName } from '../config/types.ts';

/** `test`: the console's and the admin API's "send test alert", sent to one target only. */
export type AlertKind = AlertEventName | 'test';

export interface AlertEvent {
  event: AlertKind;
  backend?: string;
  user?: string;
  alias?: string;
  /** Which of a backend's keys, as a masked hint (`…a1b2`), never the key: a key pool's refused key. */
  key?: string;
  /** The backend's error kind (`unreachable`, `auth`, …) for backend events. */
  kind?: string;
  detail: string;
  /** Unix ms. */
  at: number;
}

/** What the dedupe tells events apart by: the event and its subject (a job's alias before its backend; a key). */
export function dedupeKey(e: AlertEvent): string {
  return `${e.event}\u0000${e.alias ?? e.backend ?? e.user ?? ''}\u0000${e.key ?? ''}`;
}

/** One line naming what happened. */
export function titleOf(e: AlertEvent): string {
  switch (e.event) {
    case 'backend_down':
      return `Backend ${e.backend} is down${e.kind ? ` (${e.kind})` : ''}`;
    case 'backend_up':
      return `Backend ${e.backend} is up again`;
    case 'credential_rejected':
      return `Backend ${e.backend} rejected the gateway's credential${e.key ? ` (key ${e.key})` : ''}`;
    case 'quota_reached':
      return `User ${e.user} reached a quota`;
    case 'paid_budget_reached':
      return 'The monthly budget for paid backends is spent';
    case 'job_failed':
      return `Media jobs on ${e.alias} fail`;
    case 'gateway_started':
      return 'Gateway started';
    case 'test':
      return 'Test alert';
  }
}

/** ntfy's priority (1 min … 5 max) and tags (emoji short codes) per event. */
export function ntfyStyleOf(event: AlertKind): { priority: number; tags: string } {
  switch (event) {
    case 'backend_down':
      return { priority: 4, tags: 'warning' };
    case 'backend_up':
      return { priority: 3, tags: 'white_check_mark' };
    case 'credential_rejected':
      return { priority: 4, tags: 'key' };
    case 'quota_reached':
      return { priority: 3, tags: 'hourglass' };
    case 'paid_budget_reached':
      return { priority: 4, tags: 'moneybag' };
    case 'job_failed':
      return { priority: 3, tags: 'x' };
    case 'gateway_started':
      return { priority: 2, tags: 'rocket' };
    case 'test':
      return { priority: 3, tags: 'test_tube' };
  }
}
