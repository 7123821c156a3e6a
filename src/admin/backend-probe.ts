/**
 * The discovery dry run of a backend spec (the console's "Test" button): asks the backend what
 * it serves on a connection of its own and with a ComfyHealth of its own, so nothing is
 * registered or remembered, and words a failure for the form with its secrets scrubbed.
 */
import { Agent } from 'undici';
import { describeError } from '../backends/errors.ts';
import { kindOf } from '../backends/kinds/index.ts';
import { probeBackend, ProbeError } from '../backends/probe.ts';
import { maskUrl, redactBackendText } from '../backends/secret-scrub.ts';
import type { BackendErrorKind } from '../backends/types.ts';
import type { ConfigProblem } from '../config/problems.ts';
import type { BackendSpec, BackendType } from '../config/types.ts';
import { ComfyHealth } from '../media/comfy/health.ts';
import { inventoryCounts, type InventoryCounts } from './config-views.ts';

export type TestBackendResult =
  | { ok: true; kind: BackendType; models: string[]; inventory?: InventoryCounts; ms: number }
  | { ok: false; error: string; errorKind?: BackendErrorKind; status?: number; problems?: ConfigProblem[] };

/** What `spec` serves, asked within `timeoutMs`; a refusal says why, as the form shows it. */
export async function probeSpec(spec: BackendSpec, timeoutMs: number): Promise<TestBackendResult> {
  const agent = new Agent({ connect: { timeout: timeoutMs } });
  const comfy = new ComfyHealth();
  const started = Date.now();
  try {
    const models = await probeBackend(spec, agent, timeoutMs, comfy);
    const result: TestBackendResult = {
      ok: true,
      kind: spec.type,
      models: models.map((m) => m.id),
      ms: Date.now() - started,
    };
    const inventory = kindOf(spec).isMedia ? comfy.inventory(spec.name) : undefined;
    if (inventory) result.inventory = inventoryCounts(inventory);
    return result;
  } catch (err) {
    if (err instanceof ProbeError) {
      const error = `${maskUrl(spec.url)}: ${redactBackendText(err.message, spec)}`;
      return { ok: false, error, errorKind: err.kind, ...(err.status !== undefined ? { status: err.status } : {}) };
    }
    const d = describeError(err);
    const what =
      d.kind === 'timeout'
        ? `no answer within ${timeoutMs / 1000} s`
        : d.kind === 'unreachable'
          ? 'cannot connect'
          : 'request failed';
    const error = `${maskUrl(spec.url)}: ${what} (${redactBackendText(d.detail, spec)})`;
    return { ok: false, error, errorKind: d.kind };
  } finally {
    void agent.destroy().catch(() => {});
  }
}
