/** Wake-on-LAN wired to the gateway's parts: discovery probes a waking box, the scheduler says when one is idle. */
import type { Logger } from 'pino';
import type { BackendRegistry } from './backends/registry.ts';
import type { Discovery } from './backends/discovery.ts';
import { Waker } from './backends/wake/waker.ts';
import type { Scheduler } from './scheduler/index.ts';

export type { Waker } from './backends/wake/waker.ts';

export function gatewayWaker(
  registry: BackendRegistry,
  discovery: Pick<Discovery, 'probe'>,
  scheduler: Pick<Scheduler, 'inflightOf' | 'parkedOn'>,
  now: () => number,
  log: Logger,
): Waker {
  return new Waker({
    registry,
    probe: (name) => void discovery.probe(name),
    // in flight, or parked for it: a box put to sleep now would strand them
    busy: (name) => scheduler.inflightOf(name) > 0 || scheduler.parkedOn(name) > 0,
    now,
    log,
  });
}
