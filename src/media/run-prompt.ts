/**
 * The prompt of one attempt on one ComfyUI box: submitted, followed to its end (progress and
 * previews to the job's listeners, progress to the store now and then), and its output files
 * kept; every way it can end there is turned into the attempt's verdict.
 */
import { randomUUID } from 'node:crypto';
import type { ComfyKnobs } from '../config/defaults.ts';
import type { CompileResult } from './compiler/index.ts';
import type { ComfyHistoryEntry } from './comfy/answers.ts';
import type { ComfyClient } from './comfy/client.ts';
import type { LiveState } from './jobs/live.ts';
import { collectOutputs } from './comfy/outputs-fetch.ts';
import { ProgressTracker } from './comfy/prompt-progress.ts';
import type { Attempt, JobPlan, RunnerDeps } from './run-plan.ts';
import type { JobEvent } from './service-types.ts';

/** Progress reaches the store at most this often (live readers see every step). */
const PROGRESS_SAVE_MS = 500;

/** Submits the compiled prompt, follows it to its end, keeps its files. */
export async function runPrompt(
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
