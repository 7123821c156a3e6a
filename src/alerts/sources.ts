/**
 * Where events come from, as pure mappings onto `Alerts.emit`: a backend's verdicts (the
 * registry's `onVerdict`), a call's outcome (quota and paid-budget refusals, a paid call that
 * spent the budget) and a media job's end. The wiring (gateway-alerts.ts) calls them; each
 * returns at once when no target is configured.
 */
import type { KeyRejection, Verdict } from '../backends/registry.ts';
import type { CallOutcome } from '../stats/call-outcome.ts';
import { RefusalReason } from '../stats/record.ts';
import type { Alerts } from './alerts.ts';

type Emitter = Pick<Alerts, 'active' | 'emit' | 'wants'>;

/**
 * A backend's verdict changed: down after being up, up after being down (never on the first
 * verdict after it joined), and a refused credential (401/403) whenever it is newly the reason.
 */
export function backendVerdict(alerts: Emitter, name: string, now: Verdict, before: Verdict | undefined): void {
  if (!alerts.active) return;
  const kind = now.error?.kind;
  if (!now.up && kind === 'auth' && before?.error?.kind !== 'auth') {
    const status = now.error?.status ? ` (HTTP ${now.error.status})` : '';
    alerts.emit('credential_rejected', { backend: name, kind, detail: `${name} refused the credential${status}` });
  }
  if (!before) return;
  if (before.up && !now.up) {
    alerts.emit('backend_down', { backend: name, kind, detail: now.error?.detail ?? 'failed its health check' });
  } else if (!before.up && now.up) {
    const was = before.error?.kind;
    const detail = `${name} answers again${was ? ` (it was down: ${was})` : ''}`;
    alerts.emit('backend_up', { backend: name, ...(was && { kind: was }), detail });
  }
}

/**
 * One key of a backend's pool refused (401/403): `credential_rejected` naming the key by its hint
 * (the dedupe keeps keys apart). A 429 only mutes the key for a while: no alert.
 */
export function keyRejected(alerts: Emitter, e: KeyRejection): void {
  if (!alerts.active || e.status === 429) return;
  const detail = `${e.backend} refused key ${e.key_hint} (HTTP ${e.status}); muted, the pool's other keys serve`;
  alerts.emit('credential_rejected', { backend: e.backend, key: e.key_hint, kind: 'auth', detail });
}

export interface CallAlertDeps {
  /** Whether a backend is paid (`paid: true`); a Map lookup. */
  isPaid: (backend: string) => boolean;
  /** The budget's refusal text while `paid_budget_usd_month` is spent; undefined otherwise. */
  budgetSpent: () => string | undefined;
}

/** A call's outcome: a quota refusal names its user; the paid budget, refused or just spent. */
export function callEnded(alerts: Emitter, deps: CallAlertDeps, o: CallOutcome): void {
  if (!alerts.active) return;
  const reason = o.reason;
  if (reason === RefusalReason.quotaDay || reason === RefusalReason.quotaMonth) {
    const which = reason === RefusalReason.quotaDay ? 'its daily request quota' : 'its monthly cost quota';
    alerts.emit('quota_reached', { user: o.source, detail: `${o.source} reached ${which}: calls are refused (429)` });
  } else if (reason === RefusalReason.paidBudget) {
    alerts.emit('paid_budget_reached', {
      detail: 'paid_budget_usd_month is spent: a call only paid backends serve was refused',
    });
  } else if (o.backend && o.status < 400 && deps.isPaid(o.backend) && alerts.wants('paid_budget_reached')) {
    const spent = deps.budgetSpent();
    if (spent) alerts.emit('paid_budget_reached', { detail: spent });
  }
}

/** A media job's end: a failure (not a cancel) names its alias; the dedupe keeps it to one per interval. */
export function jobEnded(alerts: Emitter, o: CallOutcome): void {
  if (!alerts.active || o.status < 500 || o.reason === 'cancelled') return;
  const alias = o.requestedModel ?? '(unknown)';
  const where = o.backend ? ` on ${o.backend}` : '';
  alerts.emit('job_failed', {
    alias,
    ...(o.backend && { backend: o.backend }),
    detail: `a job of ${alias} failed${where}: ${o.reason ?? 'failed'}`,
  });
}
