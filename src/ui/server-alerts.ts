/**
 * The server tab's alerts section: each target (URL masked) with its format, events, interval
 * and last send, and the outcome of a test send just made. Plain data for
 * views/partials/server-alerts.eta.
 */
import type { AlertTargetView } from '../alerts/alerts.ts';

/** The outcome of the test send this page answers. */
export interface AlertTestShown {
  index: number;
  ok: boolean;
  status?: number;
  error?: string;
}

export interface AlertRow {
  index: number;
  url: string;
  format: string;
  events: string;
  interval: string;
  /** The last POST, in words; undefined before any. */
  last?: { ok: boolean; text: string; at: number };
  test?: { ok: boolean; text: string };
}

export function alertsModel(targets: readonly AlertTargetView[], test?: AlertTestShown): AlertRow[] {
  return targets.map((t) => {
    const row: AlertRow = {
      index: t.index,
      url: t.url,
      format: t.format,
      events: t.events === 'all' ? 'all events' : t.events.join(', '),
      interval: t.min_interval_s > 0 ? `once per ${t.min_interval_s} s per subject` : 'every event',
    };
    if (t.last) row.last = { ok: t.last.ok, text: `${t.last.event}: ${outcomeText(t.last)}`, at: t.last.at };
    if (test && test.index === t.index) row.test = { ok: test.ok, text: outcomeText(test) };
    return row;
  });
}

function outcomeText(o: { ok: boolean; status?: number; error?: string }): string {
  if (o.ok) return `delivered (HTTP ${o.status})`;
  return `failed: ${o.error ?? (o.status ? `HTTP ${o.status}` : 'no answer')}`;
}
