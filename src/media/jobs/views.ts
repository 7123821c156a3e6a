/** A job as the API shows it: the stored row, its files, and (while it runs) its live state. Pure. */
import type { Job, JobInput, JobResult } from './job-types.ts';
import type { LiveState } from './live.ts';
import type { JobView } from '../service-types.ts';

const seconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));

export function jobView(job: Job, results: JobResult[], inputs: JobInput[], live: LiveState | undefined): JobView {
  const base = `/v1/jobs/${job.id}`;
  const summary = job.summary;
  const running = job.status === 'running';
  return {
    id: job.id,
    object: 'generation.job',
    model: job.alias,
    status: job.status,
    created_at: Math.floor(job.createdAt / 1000),
    started_at: seconds(job.startedAt),
    finished_at: seconds(job.finishedAt),
    expires_at: Math.floor(job.expiresAt / 1000),
    backend: job.backend,
    progress: job.status === 'done' ? 100 : running && live ? Math.max(live.progress, job.progress) : job.progress,
    node: running ? (live?.node ?? job.node) : null,
    queue_position: job.status === 'queued' ? (live?.position() ?? null) : null,
    seed: summary && summary.seed !== undefined && summary.seed !== null ? String(summary.seed) : null,
    prompt: job.request.prompt ?? null,
    params: job.request.params,
    summary,
    error: job.error,
    results: results.map((r) => ({
      n: r.n,
      kind: r.kind,
      mime: r.mime,
      url: `${base}/result/${r.n}`,
      bytes: r.bytes,
      sha256: r.sha256,
      ...(r.width !== undefined ? { width: r.width } : {}),
      ...(r.height !== undefined ? { height: r.height } : {}),
    })),
    inputs: inputs.map((i) => ({
      n: i.n,
      param: i.param,
      mime: i.mime,
      url: `${base}/input/${i.n}`,
      bytes: i.bytes,
      sha256: i.sha256,
    })),
    preview: running && live?.preview !== undefined,
  };
}
