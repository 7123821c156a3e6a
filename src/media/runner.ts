/**
 * Runs one media job to its end: a lease from the one scheduler (parked like any call), then
 * an attempt on the leased ComfyUI box — compile for that box, upload the job's own inputs,
 * queue the prompt, follow it, keep its files — and failover to the next box when the attempt
 * broke for a reason another box may not have (submit refused, transport, max_wait, lost
 * prompt, a prompt interrupted on the box by someone else; an execution error once). Each
 * acquire parks with its own budget (`media_park_timeout_s`), failovers included. Before
 * anything reaches the box, a GPU-group switch still under way (llama-swap unloading) is
 * waited for, bounded. Every request to the box stops on a cancel and has a bound of its own
 * (uploads and output fetches `max_wait`, the submit `read_timeout`). The job's uploaded
 * inputs are overwritten with the placeholder once the attempt ends, however it ends, unless
 * the box stopped answering. The lease is released in a `finally` on every path.
 */
import { comfyKnobs } from '../config/defaults.ts';
import { SchedulerRejection, type Candidate, type Lease, type Ticket } from '../scheduler/index.ts';
import { compile, placeholderPng, type CompileResult, type ObjectInfo } from './compiler/index.ts';
import type { ComfyClient } from './comfy/client.ts';
import type { GenerationCandidate } from './generation-catalog.ts';
import type { JobError } from './jobs/job-types.ts';
import type { LiveState } from './jobs/live.ts';
import type { Attempt, JobPlan, RunEnd, RunnerDeps } from './run-plan.ts';
import { runPrompt } from './run-prompt.ts';
import { acquireWaking, NotAwakeError } from './wake-lease.ts';
import type { JobEvent } from './service-types.ts';

/** An execution error moves the job to another box this many times at most. */
const EXECUTION_FAILOVERS = 1;

/** The longest a job waits for its GPU group's switch (llama-swap unloading) before it goes on anyway. */
export const GPU_SETTLE_MS = 15_000;

/** Runs the job; `emit` tells its listeners (running, progress, preview) as it goes. */
export async function runJob(
  deps: RunnerDeps,
  plan: JobPlan,
  live: LiveState,
  emit: (event: JobEvent) => void,
): Promise<RunEnd> {
  const signal = live.abort.signal;
  const tried = new Set<string>();
  let executionFailures = 0;
  let lastError: JobError | undefined;
  let lastBackend: string | null = null;
  /** Each box the job left, and why: shown in the job's summary. */
  const failovers: Array<JobError & { backend: string }> = [];
  for (;;) {
    const candidates = (): Candidate[] =>
      plan
        .candidates()
        .filter((c) => !tried.has(c.backend))
        .map((c) => ({ backend: c.backend, model: plan.alias }));
    // every acquire parks as long as the first may: a failover after max_wait is no reason to give up at once
    const ticket = {
      alias: plan.alias,
      candidates: candidates(),
      parkMs: plan.parkMs,
      signal,
      refresh: candidates,
      user: plan.user,
    };
    if (ticket.candidates.length === 0) {
      return {
        status: 'failed',
        error: lastError ?? { code: 'no_backend', message: `no ComfyUI backend serves ${plan.alias}` },
        backend: lastBackend,
      };
    }
    let lease: Lease;
    const follow = (parked: Ticket) => {
      live.position = () => deps.scheduler.queuePosition(parked)?.position ?? null;
    };
    follow(ticket);
    try {
      lease = await acquireWaking(deps.scheduler, deps.wake, ticket, follow);
    } catch (err) {
      if (signal.aborted) return { status: 'cancelled', backend: lastBackend };
      const reason = err instanceof SchedulerRejection ? err : undefined;
      const why =
        reason &&
        plan.explainRefusal?.(
          ticket.candidates.map((c) => c.backend),
          reason,
        );
      const code = err instanceof NotAwakeError ? err.code : (reason?.reason ?? 'scheduler');
      const error = lastError ?? { code, message: why || (err as Error).message };
      return { status: 'failed', error, backend: lastBackend };
    } finally {
      live.position = () => null;
    }
    lastBackend = lease.backend;
    let outcome: Attempt;
    try {
      outcome = await attempt(deps, plan, live, lease.backend, emit, failovers);
    } catch (err) {
      deps.log.error({ err, job: plan.id, backend: lease.backend }, 'media job attempt threw');
      outcome = {
        kind: 'fatal',
        error: { code: 'internal_error', message: 'the gateway failed while running this job' },
      };
    } finally {
      lease.release();
    }
    if (outcome.kind === 'done') return { status: 'done', backend: lease.backend };
    if (outcome.kind === 'cancelled' || signal.aborted) return { status: 'cancelled', backend: lease.backend };
    if (outcome.kind === 'fatal') return { status: 'failed', error: outcome.error, backend: lease.backend };
    lastError = outcome.error;
    tried.add(lease.backend);
    failovers.push({ backend: lease.backend, ...outcome.error });
    if (outcome.execution && ++executionFailures > EXECUTION_FAILOVERS) {
      return { status: 'failed', error: outcome.error, backend: lease.backend };
    }
    deps.log.warn({ job: plan.id, backend: lease.backend, error: outcome.error }, 'media job failing over');
    deps.store.update(
      plan.id,
      { status: 'queued', backend: null, promptId: null, node: null, progress: 0 },
      deps.now(),
    );
    live.progress = 0;
    live.node = null;
    live.step = undefined;
  }
}

/** One run on one box. Never throws for anything the box does. */
async function attempt(
  deps: RunnerDeps,
  plan: JobPlan,
  live: LiveState,
  backendName: string,
  emit: (event: JobEvent) => void,
  failovers: ReadonlyArray<JobError & { backend: string }>,
): Promise<Attempt> {
  const signal = live.abort.signal;
  const backend = deps.registry.get(backendName);
  const candidate = plan.candidates().find((c) => c.backend === backendName);
  if (!backend || !candidate)
    return { kind: 'failover', error: { code: 'backend_gone', message: `${backendName} left the fleet` } };
  if (signal.aborted) return { kind: 'cancelled' };
  const knobs = comfyKnobs(backend.spec);
  deps.store.update(plan.id, { status: 'running', backend: backendName }, deps.now());
  emit({ type: 'running', backend: backendName });

  const compiled = compileFor(plan, candidate, deps.objectInfo(backendName));
  if (!compiled.ok) {
    const { error } = compiled;
    return {
      kind: 'failover',
      error: {
        code: error.status === 400 ? 'invalid_for_backend' : 'alias_misconfigured',
        message: `${backendName}: ${error.message}`,
      },
    };
  }
  deps.store.update(
    plan.id,
    {
      summary: {
        seed: compiled.seed ?? null,
        removed: compiled.removed,
        bypassed: compiled.bypassed,
        outputs: compiled.outputs,
        notes: compiled.notes,
        ...(failovers.length ? { failovers } : {}),
      },
    },
    deps.now(),
  );

  await gpuSettled(deps, backendName, signal);
  if (signal.aborted) return { kind: 'cancelled' };

  const client = deps.clients.get(backend);
  /** A bound on one exchange with the box, besides the job's cancel. */
  const within = (ms: number) => AbortSignal.any([signal, AbortSignal.timeout(ms)]);
  const uploaded: string[] = [];
  /** The box stopped answering: nothing can be overwritten there now. */
  let unreachable = false;
  try {
    for (const upload of compiled.uploads) {
      if (signal.aborted) return { kind: 'cancelled' };
      const planned = upload.placeholder ? undefined : plan.files[upload.param];
      if (!upload.placeholder && !planned) throw new Error(`no file for ${upload.param}`);
      const file = planned
        ? { bytes: await planned.read(), mime: planned.mime }
        : { bytes: Buffer.from(placeholderPng()), mime: 'image/png' };
      // counted before it is sent: an upload stopped halfway may have left the file on the box
      if (!upload.placeholder) uploaded.push(upload.name);
      const sent = await client.upload(upload.name, file.bytes, file.mime, { signal: within(knobs.maxWaitMs) });
      if (signal.aborted) return { kind: 'cancelled' };
      // never run on whatever the box has under that name
      if (!sent.ok)
        return {
          kind: 'failover',
          error: { code: 'upload_failed', message: `${backendName}: uploading ${upload.param} failed: ${sent.error}` },
        };
    }
    if (signal.aborted) return { kind: 'cancelled' };
    const outcome = await runPrompt(deps, plan, live, backendName, knobs, client, compiled, emit, within);
    unreachable = outcome.unreachable === true;
    return outcome.attempt;
  } finally {
    if (!unreachable) overwriteInputs(deps, client, uploaded, knobs.readTimeoutMs);
  }
}

function compileFor(plan: JobPlan, candidate: GenerationCandidate, objectInfo: ObjectInfo | undefined): CompileResult {
  const images = Object.fromEntries(Object.entries(plan.files).map(([param, f]) => [param, { ext: f.ext }]));
  return compile(plan.params, candidate.alias, { jobId: plan.id, images, objectInfo, random: () => plan.seedDraw });
}

/**
 * ComfyUI cannot delete an input: the job's own files are overwritten with the placeholder (best
 * effort, each within `boundMs`).
 */
function overwriteInputs(deps: RunnerDeps, client: ComfyClient, names: string[], boundMs: number): void {
  for (const name of names) {
    void client.upload(name, placeholderPng(), 'image/png', { signal: AbortSignal.timeout(boundMs) }).then((r) => {
      if (!r.ok) deps.log.warn({ name, error: r.error }, 'comfyui: overwriting a job input failed');
    });
  }
}

/** Waits (at most GPU_SETTLE_MS, or until the job is cancelled) for the backend's GPU group to finish switching. */
async function gpuSettled(deps: RunnerDeps, backend: string, signal: AbortSignal): Promise<void> {
  const settledFor = deps.gpuSettled;
  if (!settledFor || signal.aborted) return;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      deps.log.warn(
        { backend },
        `the GPU group of ${backend} did not finish switching within ${GPU_SETTLE_MS / 1000} s; going on`,
      );
      resolve();
    }, GPU_SETTLE_MS);
    onAbort = resolve;
    signal.addEventListener('abort', onAbort, { once: true });
  });
  const switched = Promise.resolve()
    .then(() => settledFor(backend))
    .catch((err: unknown) => {
      deps.log.warn({ err, backend }, 'waiting for a GPU group switch failed');
    });
  try {
    await Promise.race([switched, bound]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort!);
  }
}
