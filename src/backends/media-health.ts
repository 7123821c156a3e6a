/**
 * The deeper health check of a media box, run by the probe after its status answer: for a
 * ComfyUI box, media/comfy/health.ts (queue watchdog, inventory, auto restart). Backends only
 * know this port, so the probe loop needs nothing of the media room.
 */
import type { Dispatcher } from 'undici';
import type { BackendSpec } from '../config/types.ts';

/** The box's executor is stuck (a prompt at the head of the queue while nothing runs). */
export class ExecutorStuck extends Error {}

export interface MediaHealthCheck {
  /** Resolves when the box is healthy; throws `ExecutorStuck` (or any error) when it is not. */
  check(
    spec: BackendSpec,
    base: string,
    dispatcher: Dispatcher,
    timeoutMs: number,
    headers: Record<string, string>,
  ): Promise<unknown>;
}
