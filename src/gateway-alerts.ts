/**
 * The alerts wired to the gateway: built over the config in force, fed by the registry's
 * verdicts and refused pool keys, and the three places gateway.ts hands over: a call's end, a
 * media job's end, the start.
 */
import type { Logger } from 'pino';
import { Alerts } from './alerts/alerts.ts';
import { backendVerdict, callEnded, jobEnded, keyRejected, type CallAlertDeps } from './alerts/sources.ts';
import type { BackendRegistry } from './backends/registry.ts';
import type { GatewayConfig } from './config/types.ts';
import type { CallOutcome } from './stats/call-outcome.ts';
import type { PaidGate } from './stats/paid-budget.ts';

export interface AlertWiring {
  config: () => GatewayConfig;
  registry: BackendRegistry;
  paidGate: PaidGate;
  log: Logger;
  configSource: string;
}

export class GatewayAlerts extends Alerts {
  private readonly calls: CallAlertDeps;

  constructor(private readonly w: AlertWiring) {
    super({ targets: () => w.config().alerts, log: w.log.child({ part: 'alerts' }) });
    w.registry.onVerdict((name, now, before) => backendVerdict(this, name, now, before));
    w.registry.onKeyRejected((e) => keyRejected(this, e));
    this.calls = {
      isPaid: (backend) => w.registry.get(backend)?.spec.paid === true,
      budgetSpent: () => {
        if (!w.paidGate.budgetRefusal()) return undefined;
        const s = w.paidGate.status();
        return `$${+s.spent_usd.toFixed(6)} of $${s.budget_usd} spent in ${s.month}: paid backends are not used`;
      },
    };
  }

  /** A call's outcome (quota and paid-budget events); one check while no target is configured. */
  callEnded(o: CallOutcome): void {
    callEnded(this, this.calls, o);
  }

  /** A media job's end (`job_failed`). */
  jobEnded(o: CallOutcome): void {
    jobEnded(this, o);
  }

  started(): void {
    const n = this.w.config().backends.length;
    this.emit('gateway_started', { detail: `started with ${n} backend${n === 1 ? '' : 's'} (${this.w.configSource})` });
  }
}
