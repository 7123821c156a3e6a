/**
 * The gateway's call log as its config sets it up, and the one way a call's outcome is
 * recorded: priced (backends/pricing.ts), made a row (outcome-record.ts), counted towards its
 * user's quotas and, when it made a row, observed by the metrics. No I/O on the record path.
 */
import type { Logger } from 'pino';
import { callPricing } from '../backends/pricing.ts';
import type { BackendRegistry } from '../backends/registry.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { CallOutcome } from './call-outcome.ts';
import { CallLog, type CallLogOptions } from './call-log.ts';
import type { GatewayMetrics } from './metrics.ts';
import { toCallRecord } from './outcome-record.ts';

type HotCallLogOptions = Pick<CallLogOptions, 'retentionDays' | 'captureBodies' | 'bodyRetentionDays' | 'logCalls'>;

/** The call log's settings a reload applies. */
export function callLogSettings(cfg: GatewayConfig): HotCallLogOptions {
  return {
    retentionDays: cfg.retention_days,
    captureBodies: cfg.capture_bodies,
    bodyRetentionDays: cfg.body_retention_days,
    logCalls: cfg.call_log,
  };
}

/** Opens the call log in `store_dir`, its failures and repeated request ids reported to `log`. */
export function openCallLog(cfg: GatewayConfig, log: Logger): CallLog {
  return CallLog.open(cfg.store_dir, {
    flushMs: cfg.stats_flush_ms,
    ...callLogSettings(cfg),
    onError: (err, during) => log.error({ err }, `call log ${during} failed`),
    onDuplicate: (rec, total) =>
      log.warn(
        { reqId: rec.request_id, status: rec.status, reason: rec.reason, total },
        'a request id was recorded again: no second row (reported at most once a minute)',
      ),
  });
}

export interface CallSinks {
  registry: BackendRegistry;
  callLog: CallLog;
  metrics: GatewayMetrics;
}

/**
 * Queues the call-log row and counts the call in the metrics. With `call_log: false` the call
 * log writes no row but still counts the call for quotas (and the metrics still see it).
 */
export function recordCall(o: CallOutcome, to: CallSinks, captureBodies: boolean): void {
  const backend = o.backend ? to.registry.get(o.backend) : undefined;
  const pricing = callPricing(backend, o.model);
  const rec = toCallRecord(o, { pricing, paid: backend?.spec.paid ?? false }, captureBodies);
  if (to.callLog.record(rec)) to.metrics.observeCall(rec); // the metrics count the rows
}
