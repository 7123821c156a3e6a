/**
 * The end of a media job's run, in one place: its row's terminal status, its call-log row, and
 * the news to everyone following the job.
 */
import type { Logger } from 'pino';
import type { CallOutcome } from '../stats/call-outcome.ts';
import type { LiveJobs, LiveState } from './jobs/live.ts';
import type { Job, JobStatus } from './jobs/job-types.ts';
import type { JobStore } from './jobs/store.ts';
import { jobView } from './jobs/views.ts';
import type { RunEnd } from './run-plan.ts';
import type { GenerationSubmit, JobView, MediaCaller } from './service-types.ts';
import { withoutBoxPaths } from './box-text.ts';

/** What finishing a job needs of the media service. */
export interface FinishDeps {
  store: JobStore;
  live: LiveJobs;
  now: () => number;
  log: Logger;
  recordOutcome: (outcome: CallOutcome) => void;
  /** The job as its owner sees it (with its results, inputs and live state). */
  viewOf: (job: Job) => JobView;
}

/**
 * The run ended: the row gets its terminal status (unless a cancel came first), the call log
 * its row, listeners and waiters the end. Whatever of that fails, the live entry goes and
 * everyone following the job hears its end (the view as far as the store still tells it).
 */
export function finishJob(
  deps: FinishDeps,
  job: Job,
  live: LiveState,
  caller: MediaCaller,
  request: GenerationSubmit,
  run: RunEnd,
  startedAt: number,
): void {
  const now = deps.now();
  // what a box wrote reaches the job's owner without the box's folders
  const end: RunEnd =
    run.status !== 'failed' ? run : { ...run, error: { ...run.error, message: withoutBoxPaths(run.error.message) } };
  let final: Job = job;
  try {
    if (end.status === 'failed') deps.store.update(job.id, { status: 'failed', error: end.error, node: null }, now);
    else if (end.status === 'cancelled')
      deps.store.update(
        job.id,
        { status: 'cancelled', error: { code: 'cancelled', message: 'cancelled' }, node: null },
        now,
      );
    else deps.store.update(job.id, { status: 'done', node: null }, now);
    final = deps.store.get(job.id, now) ?? job;
  } catch (err) {
    // the store closed under a run that outlived the gateway: the next start reconciles it
    deps.log.warn({ err, job: job.id }, 'finishing a media job failed');
    final = {
      ...job,
      status: end.status,
      error:
        end.status === 'failed'
          ? end.error
          : end.status === 'cancelled'
            ? { code: 'cancelled', message: 'cancelled' }
            : null,
    };
  }
  try {
    deps.recordOutcome({
      requestId: request.requestId,
      endpoint: request.endpoint,
      source: caller.source,
      userId: caller.userId,
      requestedModel: request.alias,
      backend: end.backend,
      model: request.alias,
      status: loggedStatus(final.status, end.backend),
      reason: final.status === 'done' ? null : (final.error?.code ?? final.status),
      startedAt,
      durationMs: now - startedAt,
      ttftMs: null,
    });
  } catch (err) {
    deps.log.warn({ err, job: job.id }, 'logging a finished media job failed');
  } finally {
    // the row counts (or not) now: the job stops counting as running against its user's quota
    request.release?.();
    let view: JobView;
    try {
      view = deps.viewOf(final);
    } catch {
      view = jobView(final, [], [], undefined);
    }
    deps.live.finish(job.id, { type: final.status as 'done' | 'failed' | 'cancelled', job: view });
    live.settle(view); // a no-op when live.finish settled it
  }
}

/**
 * The call-log status of a finished job. A job cancelled before it reached any box is logged
 * 409 with no backend, a refusal (stats/quota.ts `countsTowardQuota`): it gives its quota
 * count back. One cancelled on a box (499) used the GPU and counts.
 */
function loggedStatus(status: JobStatus, backend: string | null): number {
  if (status === 'done') return 200;
  if (status === 'cancelled') return backend === null ? 409 : 499;
  return 502;
}
