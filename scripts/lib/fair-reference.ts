/**
 * What an ideal scheduler could do on the simulated fleet (sim-fleet.ts), with no gateway and
 * no network: the same box model (parallel slots, shared rates), fed by a perfectly fair
 * non-preemptive order (a freed slot goes to the user with the least slot-seconds so far,
 * FIFO within a user) or by one FIFO. bench-fairness.ts prints it beside the measured run, so
 * a miss can be told apart from a target this fleet cannot meet: no order can start a call
 * before a running one ends.
 *
 * Pure: a fixed-step simulation in homelab seconds.
 */
import type { SimBoxSpec } from './sim-fleet.ts';

export interface ReferenceCall {
  user: string;
  /** Homelab seconds after the start. */
  at: number;
  promptTokens: number;
  maxTokens: number;
}

interface Running {
  call: ReferenceCall;
  prefillLeft: number;
  decoded: number;
  first: number | null;
}

const STEP_S = 0.005;

/** Each call's time to first token (homelab s), in the order of `calls`. */
export function referenceTtfts(boxes: SimBoxSpec[], calls: ReferenceCall[], order: 'fair' | 'fifo'): number[] {
  const arrivals = calls.map((call, i) => ({ call, i })).sort((x, y) => x.call.at - y.call.at);
  const queued: { call: ReferenceCall; i: number }[] = [];
  const served = new Map<string, number>();
  const running = boxes.map(() => new Set<Running & { i: number }>());
  const ttft = new Array<number>(calls.length).fill(NaN);
  let next = 0;
  let done = 0;
  for (let t = 0; done < calls.length && t < 1e6; t += STEP_S) {
    while (next < arrivals.length && arrivals[next].call.at <= t) queued.push(arrivals[next++]);
    boxes.forEach((box, b) => {
      while (running[b].size < box.parallel && queued.length > 0) {
        const pick = order === 'fifo' ? 0 : leastServed(queued, served);
        const { call, i } = queued.splice(pick, 1)[0];
        running[b].add({ call, i, prefillLeft: call.promptTokens / box.prefill, decoded: 0, first: null });
      }
      const n = running[b].size;
      const share = n === 0 ? 0 : (1 + box.scaling * (n - 1)) / n;
      for (const job of [...running[b]]) {
        served.set(job.call.user, (served.get(job.call.user) ?? 0) + STEP_S);
        let left = STEP_S * share;
        const used = Math.min(left, job.prefillLeft);
        job.prefillLeft -= used;
        left -= used;
        if (job.prefillLeft > 0) continue;
        job.decoded = Math.min(job.call.maxTokens, job.decoded + left * box.decode);
        if (job.first === null && job.decoded >= 1) ttft[job.i] = (job.first = t) - job.call.at;
        if (job.decoded >= job.call.maxTokens) {
          running[b].delete(job);
          done++;
        }
      }
    });
  }
  return ttft;
}

/** The index of the oldest queued call of the user with the least service so far. */
function leastServed(queued: { call: ReferenceCall }[], served: Map<string, number>): number {
  let best = 0;
  for (let k = 1; k < queued.length; k++) {
    const user = queued[k].call.user;
    if ((served.get(user) ?? 0) < (served.get(queued[best].call.user) ?? 0)) best = k;
  }
  return best;
}
