/**
 * One completed call learnt into its backend's slot state: the backend's and its model's
 * figures (service-time.ts) and, for a call that needed a model load, the swap cost
 * (swap-cost.ts). Pure, no clock; Scheduler.recordSpeed calls it.
 */
import { countsAsCall, learnCall, type ServiceFigures } from './service-time.ts';
import type { BackendSlots } from './slots.ts';
import { learnSwap, swapResidual, swapSecondsFor } from './swap-cost.ts';
import type { SpeedSample } from './types.ts';

/**
 * Learns `sample` into `slots` (in place). The swap residual is taken against the figures
 * learnt before this call, so a call never explains itself; its service time is then learnt net
 * of that residual (else of the learnt swap figure). A load sent to a busy box also waited for
 * the box's other calls to drain: its service time is not learnt.
 */
export function learnSpeed(slots: BackendSlots, sample: SpeedSample): void {
  if (!countsAsCall(sample)) return;
  const backend = (slots.service ??= { samples: 0 });
  const model = sample.model === undefined ? undefined : modelFigures(slots, sample.model);
  const loadSeconds = sample.neededLoad ? learnLoad(slots, sample, model, backend) : undefined;
  learnCall(backend, sample, loadSeconds);
  slots.speed = backend.decodeRate;
  if (model) learnCall(model, sample, loadSeconds);
}

function modelFigures(slots: BackendSlots, model: string): ServiceFigures {
  const byModel = (slots.serviceByModel ??= new Map());
  let figures = byModel.get(model);
  if (!figures) byModel.set(model, (figures = { samples: 0 }));
  return figures;
}

/** A load's swap residual learnt for its model; what its load took (the residual, else the learnt figure). */
function learnLoad(
  slots: BackendSlots,
  sample: SpeedSample,
  model: ServiceFigures | undefined,
  backend: ServiceFigures,
): number | undefined {
  if (sample.busyAtDispatch) return undefined;
  const extra = swapResidual(sample, model, backend);
  if (sample.model === undefined) return extra ?? slots.swapSecondsMean;
  if (extra !== undefined) learnSwap(slots, sample.model, extra);
  return extra ?? swapSecondsFor(slots, sample.model);
}
