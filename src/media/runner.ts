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
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { BackendRegistry } from '../backends/registry.ts';
import { comfyKnobs, type ComfyKnobs } from '../config/defaults.ts';
import { SchedulerRejection, type Candidate, type Lease, type Scheduler, type TicketUser } from '../scheduler/index.ts';
import { compile, placeholderPng, type CompileResult, type ObjectInfo } from './compiler/index.ts';
import type { Artifacts } from './jobs/artifacts.ts';
import type { ComfyClient, ComfyHistoryEntry } from './comfy/client.ts';
import type { ComfyClients } from './comfy/clients.ts';
import type { GenerationCandidate } from './generation-catalog.ts';
import type { JobError, JobStore } from './jobs/store.ts';
import type { LiveState } from './jobs/live.ts';
import { collectOutputs } from './comfy/outputs-fetch.ts';
import { ProgressTracker } from './comfy/prompt-progress.ts';
import type { JobEvent } from './service-types.ts';

export interface RunnerDeps {
  scheduler: Scheduler;
  registry: BackendRegistry;
  clients: ComfyClients;
  store: JobStore;
  artifacts: Artifacts;
  objectInfo: (backend: string) => ObjectInfo | undefined;
  /** A box misbehaved: let discovery look at it now. */
  probe: (backend: string) => void;
  /**
   * Resolves once the GPU group of `backend` has finished switching to media work (its
   * llama-swap unloaded): GpuSwitch.pending of the backend's group. Waited for at most
   * GPU_SETTLE_MS before anything is sent to the box; absent, nothing is waited for.
   */
  gpuSettled?: (backend: string) => Promise<void>;
  now: () => number;
  log: Logger;
}

/** Everything a run needs, decided when the job was accepted. */
export interface JobPlan {
  id: string;
  alias: string;
  params: Record<string, unknown>;
  /** The job's files by param, read (from where the job keeps them) when an attempt uploads them. */
  files: Record<string, { mime: string; ext: string; read: () => Promise<Buffer> }>;
  /** Candidates now (allow-list and LoRAs applied), and again while parked. */
  candidates: () => GenerationCandidate[];
  /** The one random draw for the seed, so every attempt uses the same seed. */
  seedDraw: number;
  /** Parking budget of each acquire (ms): the first one's and every failover's. */
  parkMs: number;
  /** The user its seconds are charged to in the fair share (`Ticket.user`); absent = the anonymous user. */
  user?: TicketUser;
  /** Why the scheduler refused the job, per box, worded for its owner (routing/refusal-explainer.ts). */
  explainRefusal?: (backends: string[], rejection: SchedulerRejection) => string | undefined;
}

export type RunEnd =
  | { status: 'done'; backend: string }
  | { status: 'failed'; error: JobError; backend: string | null }
  | { status: 'cancelled'; backend: string | null };

type Attempt =
  | { kind: 'done' }
  | { kind: 'cancelled' }
  /** Try another box; `execution`: the workflow itself failed there (failover once). */
  | { kind: 'failover'; error: JobError; execution?: boolean }
  | { kind: 'fatal'; error: JobError };

/** An execution error moves the job to another box this many times at most. */
const EXECUTION_FAILOVERS = 1;

/** Progress reaches the store at most this often (live readers see every step). */
const PROGRESS_SAVE_MS = 500;

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
    live.position = () => deps.scheduler.queuePosition(ticket)?.position ?? null;
    try {
      lease = await deps.scheduler.acquire(ticket);
    } catch (err) {
      if (signal.aborted) return { status: 'cancelled', backend: lastBackend };
      const reason = err instanceof SchedulerRejection ? err : undefined;
      const why =
        reason &&
        plan.explainRefusal?.(
          ticket.candidates.map((c) => c.backend),
          reason,
        );
      const error = lastError ?? { code: reason?.reason ?? 'scheduler', message: why || (err as Error).message };
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

/** Submits the compiled prompt, follows it to its end, keeps its files. */
async function runPrompt(
  deps: RunnerDeps,
  plan: JobPlan,
  live: LiveState,
  backendName: string,
  knobs: ComfyKnobs,
  client: ComfyClient,
  compiled: Extract<CompileResult, { ok: true }>,
  emit: (event: JobEvent) => void,
  within: (ms: number) => AbortSignal,
): Promise<{ attempt: Attempt; unreachable?: boolean }> {
  const signal = live.abort.signal;
  const promptId = randomUUID();
  deps.store.update(plan.id, { promptId }, deps.now()); // before submitting: a crash can then still interrupt it
  let savedAt = 0;
  const tracker = new ProgressTracker(
    compiled.prompt,
    (p) => {
      live.progress = p.progress;
      live.node = p.node;
      live.step = p.step;
      emit({ type: 'progress', progress: p.progress, node: p.node, ...(p.step ? { step: p.step } : {}) });
      const now = deps.now();
      if (now - savedAt >= PROGRESS_SAVE_MS) {
        savedAt = now;
        deps.store.update(plan.id, { progress: p.progress, node: p.node }, now);
      }
    },
    (preview) => {
      live.preview = preview;
      emit({ type: 'preview', url: `/v1/jobs/${plan.id}/preview` });
    },
  );
  const unsubscribe = client.onProgress(promptId, (event) => tracker.observe(event));
  const started = deps.now();
  try {
    const submitted = await client.submit(compiled.promptJson, promptId, { signal: within(knobs.readTimeoutMs) });
    // queued after all, a cancel is waitFor's to carry out (it takes the prompt off the box)
    if (!submitted.ok && signal.aborted) return { attempt: { kind: 'cancelled' } };
    if (!submitted.ok) {
      if (submitted.status === 0 || submitted.status >= 500) deps.probe(backendName);
      const code = submitted.status === 400 ? 'prompt_refused' : 'submit_failed';
      const attempt: Attempt = {
        kind: 'failover',
        error: { code, message: `${backendName}: ${submitted.error}${nodeErrorsText(submitted.nodeErrors)}` },
      };
      return { attempt, unreachable: submitted.status === 0 };
    }
    const waited = await client.waitFor(promptId, {
      pollMs: knobs.pollMs,
      maxWaitMs: knobs.maxWaitMs,
      signal,
      unreachableAfterMs: knobs.disconnectGraceMs,
      // the watchdog found the executor stuck: the prompt would wait there until max_wait
      abandonIf: () => (deps.registry.get(backendName)?.error?.kind === 'exec_stuck' ? 'exec_stuck' : undefined),
    });
    switch (waited.kind) {
      case 'interrupted':
        // not our cancel: someone stopped it on the box (ComfyUI's own Cancel button)
        if (signal.aborted) return { attempt: { kind: 'cancelled' } };
        return {
          attempt: {
            kind: 'failover',
            error: { code: 'interrupted', message: `${backendName} interrupted the prompt (not this gateway)` },
          },
        };
      case 'timeout':
        return {
          attempt: {
            kind: 'failover',
            error: {
              code: 'max_wait',
              message: `${backendName} did not finish within ${knobs.maxWaitMs / 1000} s (interrupted)`,
            },
          },
        };
      case 'unreachable':
        deps.probe(backendName);
        return {
          attempt: {
            kind: 'failover',
            error: { code: 'unreachable', message: `${backendName} stopped answering: ${waited.error}` },
          },
          unreachable: true,
        };
      case 'abandoned':
        return {
          attempt: {
            kind: 'failover',
            error: {
              code: waited.reason,
              message: `${backendName} was marked ${waited.reason}; the prompt was taken off it`,
            },
          },
        };
      case 'lost':
        deps.probe(backendName);
        return {
          attempt: {
            kind: 'failover',
            error: { code: 'lost', message: `${backendName} no longer knows the prompt (restarted?)` },
          },
        };
      case 'failed':
        return {
          attempt: {
            kind: 'failover',
            execution: true,
            error: { code: 'execution_error', message: `${backendName}: ${waited.message}` },
          },
        };
      case 'done':
        return {
          attempt: await keepResults(
            deps,
            plan,
            client,
            backendName,
            waited.entry,
            compiled,
            started,
            signal,
            within(knobs.maxWaitMs),
          ),
        };
    }
  } finally {
    unsubscribe();
    tracker.stop();
  }
}

async function keepResults(
  deps: RunnerDeps,
  plan: JobPlan,
  client: ComfyClient,
  backendName: string,
  entry: ComfyHistoryEntry,
  compiled: Extract<CompileResult, { ok: true }>,
  started: number,
  signal: AbortSignal,
  fetchSignal: AbortSignal,
): Promise<Attempt> {
  const files = await collectOutputs(client, entry, compiled.outputs, fetchSignal);
  if (signal.aborted) return { kind: 'cancelled' };
  if (!files.ok)
    return { kind: 'failover', error: { code: 'fetch_failed', message: `${backendName}: ${files.error}` } };
  if (files.files.length === 0)
    return {
      kind: 'fatal',
      error: { code: 'no_output', message: `the workflow finished on ${backendName} without an output file` },
    };
  for (const [n, file] of files.files.entries()) {
    const written = await deps.artifacts.write(plan.id, n, file.bytes, file.mime);
    deps.store.addResult(plan.id, { n, kind: file.kind, mime: file.mime, ...written });
  }
  deps.scheduler.recordJobSeconds(backendName, plan.alias, (deps.now() - started) / 1000);
  return { kind: 'done' };
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

/** ComfyUI's `node_errors` in one line: `; 310 (KSampler) sampler_name: Value not in list …`. */
function nodeErrorsText(nodeErrors: Record<string, unknown> | undefined): string {
  if (!nodeErrors) return '';
  const parts: string[] = [];
  for (const [node, entry] of Object.entries(nodeErrors)) {
    const e = entry as { class_type?: unknown; errors?: Array<{ message?: unknown; details?: unknown }> };
    for (const err of Array.isArray(e.errors) ? e.errors : []) {
      const text = [err.message, err.details].filter((t) => typeof t === 'string' && t !== '').join(': ');
      parts.push(`${node}${typeof e.class_type === 'string' ? ` (${e.class_type})` : ''} ${text}`);
    }
  }
  return parts.length ? `; ${parts.slice(0, 5).join('; ').slice(0, 1000)}` : '';
}
