/**
 * Runs one media job to its end: a lease from the one scheduler (parked like any call), then
 * an attempt on the leased ComfyUI box — compile for that box, upload the job's own inputs,
 * queue the prompt, follow it, keep its files — and failover to the next box when the attempt
 * broke for a reason another box may not have (submit refused, transport, max_wait, lost
 * prompt; an execution error once). The lease is released in a `finally` on every path.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { BackendRegistry } from '../backends/registry.ts';
import { comfyKnobs } from '../config/defaults.ts';
import { SchedulerRejection, type Candidate, type Lease, type Scheduler } from '../scheduler/index.ts';
import { compile, placeholderPng, type CompileResult, type ObjectInfo } from './compiler/index.ts';
import type { Artifacts } from './artifacts.ts';
import type { ComfyClient, ComfyHistoryEntry } from './comfy-client.ts';
import type { ComfyClients } from './comfy-clients.ts';
import type { GenerationCandidate } from './generation-catalog.ts';
import type { JobError, JobStore } from './job-store.ts';
import type { LiveState } from './job-live.ts';
import { collectOutputs } from './outputs-fetch.ts';
import { ProgressTracker } from './progress.ts';
import type { JobEvent, MediaFile } from './service-types.ts';

export interface RunnerDeps {
  scheduler: Scheduler;
  registry: BackendRegistry;
  clients: ComfyClients;
  store: JobStore;
  artifacts: Artifacts;
  objectInfo: (backend: string) => ObjectInfo | undefined;
  /** A box misbehaved: let discovery look at it now. */
  probe: (backend: string) => void;
  now: () => number;
  log: Logger;
}

/** Everything a run needs, decided when the job was accepted. */
export interface JobPlan {
  id: string;
  alias: string;
  params: Record<string, unknown>;
  files: Record<string, MediaFile & { ext: string }>;
  /** Candidates now (allow-list and LoRAs applied), and again while parked. */
  candidates: () => GenerationCandidate[];
  /** The one random draw for the seed, so every attempt uses the same seed. */
  seedDraw: number;
  /** Parking budget for the whole job (ms), failovers included. */
  parkMs: number;
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

/** Runs the job; `emit` tells its listeners (running, progress, preview) as it goes. */
export async function runJob(deps: RunnerDeps, plan: JobPlan, live: LiveState, emit: (event: JobEvent) => void): Promise<RunEnd> {
  const signal = live.abort.signal;
  const tried = new Set<string>();
  const deadline = deps.now() + plan.parkMs;
  let executionFailures = 0;
  let lastError: JobError | undefined;
  let lastBackend: string | null = null;
  /** Each box the job left, and why: shown in the job's summary. */
  const failovers: Array<JobError & { backend: string }> = [];
  for (;;) {
    const candidates = (): Candidate[] => plan.candidates()
      .filter((c) => !tried.has(c.backend))
      .map((c) => ({ backend: c.backend, model: plan.alias }));
    const ticket = { alias: plan.alias, candidates: candidates(), parkMs: Math.max(0, deadline - deps.now()), signal, refresh: candidates };
    if (ticket.candidates.length === 0) {
      return { status: 'failed', error: lastError ?? { code: 'no_backend', message: `no ComfyUI backend serves ${plan.alias}` }, backend: lastBackend };
    }
    let lease: Lease;
    live.position = () => deps.scheduler.queuePosition(ticket)?.position ?? null;
    try {
      lease = await deps.scheduler.acquire(ticket);
    } catch (err) {
      if (signal.aborted) return { status: 'cancelled', backend: lastBackend };
      const reason = err instanceof SchedulerRejection ? err : undefined;
      return { status: 'failed', error: lastError ?? { code: reason?.reason ?? 'scheduler', message: (err as Error).message }, backend: lastBackend };
    } finally {
      live.position = () => null;
    }
    lastBackend = lease.backend;
    let outcome: Attempt;
    try {
      outcome = await attempt(deps, plan, live, lease.backend, emit, failovers);
    } catch (err) {
      deps.log.error({ err, job: plan.id, backend: lease.backend }, 'media job attempt threw');
      outcome = { kind: 'fatal', error: { code: 'internal_error', message: 'the gateway failed while running this job' } };
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
    deps.store.update(plan.id, { status: 'queued', backend: null, promptId: null, node: null, progress: 0 }, deps.now());
    live.progress = 0;
    live.node = null;
    live.step = undefined;
  }
}

/** One run on one box. Never throws for anything the box does. */
async function attempt(
  deps: RunnerDeps, plan: JobPlan, live: LiveState, backendName: string, emit: (event: JobEvent) => void,
  failovers: ReadonlyArray<JobError & { backend: string }>,
): Promise<Attempt> {
  const signal = live.abort.signal;
  const backend = deps.registry.get(backendName);
  const candidate = plan.candidates().find((c) => c.backend === backendName);
  if (!backend || !candidate) return { kind: 'failover', error: { code: 'backend_gone', message: `${backendName} left the fleet` } };
  if (signal.aborted) return { kind: 'cancelled' };
  const knobs = comfyKnobs(backend.spec);
  deps.store.update(plan.id, { status: 'running', backend: backendName }, deps.now());
  emit({ type: 'running', backend: backendName });

  const compiled = compileFor(plan, candidate, deps.objectInfo(backendName));
  if (!compiled.ok) {
    const { error } = compiled;
    return { kind: 'failover', error: { code: error.status === 400 ? 'invalid_for_backend' : 'alias_misconfigured', message: `${backendName}: ${error.message}` } };
  }
  deps.store.update(plan.id, {
    summary: {
      seed: compiled.seed ?? null, removed: compiled.removed, bypassed: compiled.bypassed, outputs: compiled.outputs, notes: compiled.notes,
      ...(failovers.length ? { failovers } : {}),
    },
  }, deps.now());

  const client = deps.clients.get(backend);
  const uploaded: string[] = [];
  for (const upload of compiled.uploads) {
    if (signal.aborted) return { kind: 'cancelled' };
    const file = upload.placeholder ? { bytes: Buffer.from(placeholderPng()), mime: 'image/png' } : plan.files[upload.param];
    const sent = await client.upload(upload.name, file.bytes, file.mime);
    // never run on whatever the box has under that name
    if (!sent.ok) return { kind: 'failover', error: { code: 'upload_failed', message: `${backendName}: uploading ${upload.param} failed: ${sent.error}` } };
    if (!upload.placeholder) uploaded.push(upload.name);
  }
  if (signal.aborted) return { kind: 'cancelled' };

  const promptId = randomUUID();
  deps.store.update(plan.id, { promptId }, deps.now()); // before submitting: a crash can then still interrupt it
  let savedAt = 0;
  const tracker = new ProgressTracker(compiled.prompt, (p) => {
    live.progress = p.progress;
    live.node = p.node;
    live.step = p.step;
    emit({ type: 'progress', progress: p.progress, node: p.node, ...(p.step ? { step: p.step } : {}) });
    const now = deps.now();
    if (now - savedAt >= PROGRESS_SAVE_MS) {
      savedAt = now;
      deps.store.update(plan.id, { progress: p.progress, node: p.node }, now);
    }
  }, (preview) => {
    live.preview = preview;
    emit({ type: 'preview', url: `/v1/jobs/${plan.id}/preview` });
  });
  const unsubscribe = client.onProgress(promptId, (event) => tracker.observe(event));
  const started = deps.now();
  try {
    const submitted = await client.submit(compiled.promptJson, promptId);
    if (!submitted.ok) {
      if (submitted.status === 0 || submitted.status >= 500) deps.probe(backendName);
      const code = submitted.status === 400 ? 'prompt_refused' : 'submit_failed';
      return { kind: 'failover', error: { code, message: `${backendName}: ${submitted.error}${nodeErrorsText(submitted.nodeErrors)}` } };
    }
    const waited = await client.waitFor(promptId, {
      pollMs: knobs.pollMs, maxWaitMs: knobs.maxWaitMs, signal, unreachableAfterMs: knobs.disconnectGraceMs,
      // the watchdog found the executor stuck: the prompt would wait there until max_wait
      abandonIf: () => (deps.registry.get(backendName)?.error?.kind === 'exec_stuck' ? 'exec_stuck' : undefined),
    });
    switch (waited.kind) {
      case 'interrupted':
        return { kind: 'cancelled' };
      case 'timeout':
        return { kind: 'failover', error: { code: 'max_wait', message: `${backendName} did not finish within ${knobs.maxWaitMs / 1000} s (interrupted)` } };
      case 'unreachable':
        deps.probe(backendName);
        return { kind: 'failover', error: { code: 'unreachable', message: `${backendName} stopped answering: ${waited.error}` } };
      case 'abandoned':
        return { kind: 'failover', error: { code: waited.reason, message: `${backendName} was marked ${waited.reason}; the prompt was taken off it` } };
      case 'lost':
        deps.probe(backendName);
        return { kind: 'failover', error: { code: 'lost', message: `${backendName} no longer knows the prompt (restarted?)` } };
      case 'failed':
        overwriteInputs(deps, client, uploaded);
        return { kind: 'failover', execution: true, error: { code: 'execution_error', message: `${backendName}: ${waited.message}` } };
      case 'done':
        return await keepResults(deps, plan, client, backendName, waited.entry, compiled, uploaded, started);
    }
  } finally {
    unsubscribe();
    tracker.stop();
  }
}

async function keepResults(
  deps: RunnerDeps, plan: JobPlan, client: ComfyClient, backendName: string, entry: ComfyHistoryEntry,
  compiled: Extract<CompileResult, { ok: true }>, uploaded: string[], started: number,
): Promise<Attempt> {
  const files = await collectOutputs(client, entry, compiled.outputs);
  if (!files.ok) return { kind: 'failover', error: { code: 'fetch_failed', message: `${backendName}: ${files.error}` } };
  if (files.files.length === 0) return { kind: 'fatal', error: { code: 'no_output', message: `the workflow finished on ${backendName} without an output file` } };
  for (const [n, file] of files.files.entries()) {
    const written = await deps.artifacts.write(plan.id, n, file.bytes, file.mime);
    deps.store.addResult(plan.id, { n, kind: file.kind, mime: file.mime, ...written });
  }
  deps.scheduler.recordJobSeconds(backendName, plan.alias, (deps.now() - started) / 1000);
  overwriteInputs(deps, client, uploaded);
  return { kind: 'done' };
}

function compileFor(plan: JobPlan, candidate: GenerationCandidate, objectInfo: ObjectInfo | undefined): CompileResult {
  const images = Object.fromEntries(Object.entries(plan.files).map(([param, f]) => [param, { ext: f.ext }]));
  return compile(plan.params, candidate.alias, { jobId: plan.id, images, objectInfo, random: () => plan.seedDraw });
}

/** ComfyUI cannot delete an input: the job's own files are overwritten with the placeholder (best effort). */
function overwriteInputs(deps: RunnerDeps, client: ComfyClient, names: string[]): void {
  for (const name of names) {
    void client.upload(name, placeholderPng(), 'image/png').then((r) => {
      if (!r.ok) deps.log.warn({ name, error: r.error }, 'comfyui: overwriting a job input failed');
    });
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
