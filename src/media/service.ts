/**
 * The media service: generation requests become jobs in jobs.db, each run by the runner
 * through the one scheduler, with live state for progress and events, owner-gated views of
 * jobs and their files, a TTL prune, and a reconcile at start-up (what a previous process
 * left unfinished is failed, and its prompts interrupted on the boxes that still have them).
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Logger } from 'pino';
import { mayAccess } from '../auth/owner.ts';
import type { BackendRegistry } from '../backends/registry.ts';
import type { GatewayConfig } from '../config/types.ts';
import { badRequest, GatewayError } from '../errors.ts';
import type { Scheduler, SchedulerRejection } from '../scheduler/index.ts';
import type { CallOutcome } from '../stats/call-outcome.ts';
import { ArtifactError, Artifacts, extOf, type ThumbOptions } from './jobs/artifacts.ts';
import type { ComfyClients } from './comfy/clients.ts';
import { outputKind, type ObjectInfo } from './compiler/index.ts';
import type { GenerationCatalog } from './generation-catalog.ts';
import { followLive, LiveJobs } from './jobs/live.ts';
import { JOB_TERMINAL_STATUSES, newJobId, type Job, type JobStatus } from './jobs/job-types.ts';
import { JobStore } from './jobs/store.ts';
import { jobView } from './jobs/views.ts';
import type { JobPlan, RunEnd, RunnerDeps } from './run-plan.ts';
import { runJob } from './runner.ts';
import type { FileAnswer, GenerationSubmit, JobEvent, JobView, MediaCaller, MediaService } from './service-types.ts';
import { acceptRequest, allowedCandidates, fileParams, type PlanViews } from './submit-plan.ts';
import { requireReadableImages } from './inputs/image-readable.ts';
import { explainBackends, mediaSubject } from '../routing/refusal-explainer.ts';
import { storableParams } from './jobs/stored-params.ts';
import { spoolDir } from './inputs/upload-spool.ts';
import { finishJob, type FinishDeps } from './job-finish.ts';
import type { MediaWake } from './wake-lease.ts';

export interface MediaJobsDeps {
  jobsDir: string;
  scheduler: Scheduler;
  registry: BackendRegistry;
  clients: ComfyClients;
  catalog: GenerationCatalog;
  objectInfo: (backend: string) => ObjectInfo | undefined;
  config: () => GatewayConfig;
  recordOutcome: (outcome: CallOutcome) => void;
  probe: (backend: string) => void;
  /**
   * Resolves once the GPU group of `backend` finished switching to media work (GpuSwitch.pending
   * of its group); the runner waits for it (bounded) before sending anything to the box.
   */
  gpuSettled?: (backend: string) => Promise<void>;
  log: Logger;
  now?: () => number;
  /** Wakes sleeping boxes (`wake`): a job for boxes that are all down asleep is accepted and parks for them. */
  wake?: MediaWake;
}

const PRUNE_EVERY_MS = 10 * 60_000;
/** How long `cancel` waits for the run to have stopped its prompt before answering. */
const CANCEL_WAIT_MS = 5_000;

export class MediaJobs implements MediaService {
  readonly store: JobStore;
  readonly artifacts: Artifacts;
  private readonly live = new LiveJobs();
  private readonly now: () => number;
  private readonly views: PlanViews;
  /** What a run (runner.ts) and its end (job-finish.ts) reach of the service, made once. */
  private readonly runs: RunnerDeps;
  private readonly finishing: FinishDeps;
  private pruneTimer?: NodeJS.Timeout;
  private closed = false;
  /** Told of each job made, with when it expires (cluster mode: the job's id is registered as this instance's). */
  jobCreated?: (id: string, expiresAt: number) => void;

  constructor(private readonly deps: MediaJobsDeps) {
    this.store = JobStore.open(deps.jobsDir);
    this.artifacts = new Artifacts(deps.jobsDir);
    this.now = deps.now ?? Date.now;
    this.views = {
      catalog: deps.catalog,
      objectInfo: deps.objectInfo,
      routable: (backends) =>
        deps.scheduler.order(backends.map((backend) => ({ backend, model: '' }))).map((c) => c.backend),
      wake: (backends) => (deps.wake?.wakeFor(backends)?.extraMs ?? 0) > 0,
      explainDown: (backends, alias, caller) =>
        explainBackends(deps, backends, { reason: 'no_backend' }, mediaSubject(alias, caller)),
    };
    this.runs = { ...deps, store: this.store, artifacts: this.artifacts, now: this.now };
    this.finishing = {
      store: this.store,
      live: this.live,
      now: this.now,
      log: deps.log,
      recordOutcome: (outcome) => this.deps.recordOutcome(outcome),
      viewOf: (job) => this.viewOf(job),
    };
  }

  /** Fails what a previous process left unfinished (interrupting it where it still runs) and starts the TTL prune. */
  start(): void {
    // what a previous process was receiving when it stopped: gone before the first upload can
    // arrive (removed later, it would take a new upload's spool with it)
    try {
      rmSync(spoolDir(this.deps.jobsDir), { recursive: true, force: true });
    } catch (err) {
      this.deps.log.warn({ err }, 'removing the upload spools of a previous run failed');
    }
    for (const orphan of this.store.reconcile(this.now())) {
      const backend = orphan.backend ? this.deps.registry.get(orphan.backend) : undefined;
      if (!backend || !orphan.promptId) continue;
      const client = this.deps.clients.get(backend);
      const promptId = orphan.promptId;
      void client.dequeue(promptId).then(() => client.interrupt(promptId));
    }
    void this.prune();
    this.pruneTimer = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.pruneTimer.unref();
  }

  /** Stops every run (their prompts are interrupted), waits a little for them, closes jobs.db. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.pruneTimer);
    const running = this.live.ids().map((id) => this.live.get(id)!);
    for (const state of running) state.abort.abort();
    await Promise.race([Promise.all(running.map((s) => s.settled)), delay(CANCEL_WAIT_MS)]);
    this.store.close();
  }

  async prune(): Promise<number> {
    try {
      return await this.artifacts.prune(this.store, this.now());
    } catch (err) {
      this.deps.log.error({ err }, 'pruning expired media jobs failed');
      return 0;
    }
  }

  async submit(caller: MediaCaller, submitted: GenerationSubmit): Promise<JobView> {
    if (this.closed)
      throw new GatewayError({ status: 503, code: 'shutting_down', message: 'the gateway is shutting down' });
    // the prompt is a workflow param like any other (mapped to the positive text)
    const request =
      submitted.prompt === undefined || Object.hasOwn(submitted.params, 'prompt')
        ? submitted
        : { ...submitted, params: { prompt: submitted.prompt, ...submitted.params } };
    const candidates = allowedCandidates(this.views, caller, request.alias, request.params);
    const id = newJobId();
    const accepted = acceptRequest(this.views, request, candidates, id, caller);
    await requireReadableImages(accepted.files, accepted.imageParams);
    const cfg = this.deps.config();
    const createdAt = this.now();
    const inputs = Object.entries(accepted.files).map(([param, f], n) => ({
      n,
      param,
      file: f,
      sha256: createHash('sha256').update(f.bytes).digest('hex'),
    }));
    const job = this.store.create({
      id,
      owner: caller.owner,
      alias: request.alias,
      createdAt,
      expiresAt: createdAt + cfg.job_ttl_h * 3_600_000,
      request: {
        ...(request.prompt !== undefined ? { prompt: request.prompt } : {}),
        params: storableParams(accepted.params),
        inputs: inputs.map((i) => ({
          param: i.param,
          name: `in-${i.n}.${extOf(i.file.mime)}`,
          sha256: i.sha256,
          mime: i.file.mime,
          bytes: i.file.bytes.length,
        })),
      },
    });
    this.jobCreated?.(id, job.expiresAt);
    const live = this.live.start(id);
    const fail = (code: string, message: string): GatewayError => {
      const end: RunEnd = { status: 'failed', backend: null, error: { code, message } };
      finishJob(this.finishing, job, live, caller, request, end, createdAt);
      // the job's own row is in the call log now: the route must not log a refusal as well
      return Object.assign(new GatewayError({ status: 500, code, type: 'api_error', message }), { recorded: true });
    };
    /**
     * The job's files as the run reads them: from its kept inputs, so the request's bytes need not
     * outlive the submit.
     */
    const kept: JobPlan['files'] = {};
    try {
      for (const input of inputs) {
        const written = await this.artifacts.writeInput(id, input.n, input.file.bytes, input.file.mime);
        this.store.addInput(id, {
          n: input.n,
          param: input.param,
          mime: input.file.mime,
          file: written.file,
          bytes: written.bytes,
          sha256: written.sha256,
        });
        kept[input.param] = {
          mime: input.file.mime,
          ext: input.file.ext,
          read: () => this.readInput(id, written.file),
        };
      }
    } catch (err) {
      this.deps.log.error({ err, job: id }, 'keeping a job input failed');
      throw fail('input_write_failed', 'the gateway could not keep the inputs of this job');
    }
    try {
      if (accepted.seed !== undefined) this.store.update(id, { summary: { seed: accepted.seed } }, this.now());
      const plan = {
        id,
        alias: request.alias,
        params: accepted.params,
        files: kept,
        candidates: accepted.candidates,
        seedDraw: accepted.seedDraw,
        parkMs: cfg.media_park_timeout_s * 1000,
        user: caller.ticketUser,
        explainRefusal: (backends: string[], rejection: SchedulerRejection) => {
          const subject = { ...mediaSubject(request.alias, caller), parkS: cfg.media_park_timeout_s };
          return explainBackends(this.deps, backends, rejection, subject)?.message;
        },
      };
      void runJob(this.runs, plan, live, (event) => this.live.emit(id, event))
        .catch((err): RunEnd => {
          this.deps.log.error({ err, job: id }, 'media job run threw');
          return {
            status: 'failed',
            backend: null,
            error: { code: 'internal_error', message: 'the gateway failed while running this job' },
          };
        })
        .then((end) => finishJob(this.finishing, job, live, caller, request, end, createdAt));
    } catch (err) {
      this.deps.log.error({ err, job: id }, 'starting a media job failed');
      throw fail('internal_error', 'the gateway could not start this job');
    }
    return this.viewOf(this.store.get(id, this.now()) ?? job);
  }

  settled(id: string, signal?: AbortSignal): Promise<JobView> {
    const state = this.live.get(id);
    if (!state) {
      const job = this.store.get(id, this.now());
      return job ? Promise.resolve(this.viewOf(job)) : Promise.reject(new Error(`no job ${id}`));
    }
    if (!signal) return state.settled;
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason ?? new Error('aborted'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      void state.settled.then((view) => {
        signal.removeEventListener('abort', onAbort);
        resolve(view);
      });
    });
  }

  view(id: string, caller: MediaCaller): JobView | undefined {
    const job = this.owned(id, caller);
    return job && this.viewOf(job);
  }

  list(caller: MediaCaller, opts: { limit?: number; status?: JobStatus }): JobView[] {
    return this.store.list(caller.admin ? null : caller.owner, opts, this.now()).map((job) => this.viewOf(job));
  }

  async cancel(id: string, caller: MediaCaller): Promise<JobView | undefined> {
    const job = this.owned(id, caller);
    if (!job) return undefined;
    if (JOB_TERMINAL_STATUSES.has(job.status)) return this.viewOf(job);
    this.store.update(
      id,
      { status: 'cancelled', error: { code: 'cancelled', message: 'cancelled by the caller' } },
      this.now(),
    );
    const state = this.live.get(id);
    if (state) {
      state.abort.abort();
      await Promise.race([state.settled, delay(CANCEL_WAIT_MS)]);
    }
    return this.view(id, caller);
  }

  subscribe(id: string, caller: MediaCaller, listener: (event: JobEvent) => void): (() => void) | undefined {
    const job = this.owned(id, caller);
    if (!job) return undefined;
    const state = this.live.get(id);
    if (!state || JOB_TERMINAL_STATUSES.has(job.status)) {
      const view = this.viewOf(job);
      if (JOB_TERMINAL_STATUSES.has(view.status))
        listener({ type: view.status as 'done' | 'failed' | 'cancelled', job: view });
      return () => {};
    }
    return followLive(job, state, listener);
  }

  async result(id: string, n: number, caller: MediaCaller, thumb?: ThumbOptions): Promise<FileAnswer | undefined> {
    const job = this.owned(id, caller);
    const result = job && this.store.results(id).find((r) => r.n === n);
    if (!result) return undefined;
    if (thumb) {
      try {
        const made = await this.artifacts.thumbnail(id, n, thumb);
        return { bytes: made.data, mime: made.mime, name: `${id}-${made.file}` };
      } catch (err) {
        if (err instanceof ArtifactError && err.code !== 'not_found') {
          throw badRequest(err.message, err.code === 'invalid_size' ? (err.param ?? 'w') : 'format', err.code);
        }
        throw err;
      }
    }
    const bytes = await this.artifacts.read(id, result.file);
    return bytes && { bytes, mime: result.mime, name: `${id}-${result.file}` };
  }

  async input(id: string, n: number, caller: MediaCaller): Promise<FileAnswer | undefined> {
    const job = this.owned(id, caller);
    const input = job && this.store.inputs(id).find((i) => i.n === n);
    if (!input) return undefined;
    const bytes = await this.artifacts.read(id, input.file);
    return bytes && { bytes, mime: input.mime, name: `${id}-${input.file}` };
  }

  preview(id: string, caller: MediaCaller): FileAnswer | undefined {
    const preview = this.owned(id, caller) && this.live.get(id)?.preview;
    return preview && { bytes: preview.bytes, mime: preview.mime, name: `${id}-preview.${extOf(preview.mime)}` };
  }

  fileParams(alias: string, caller: MediaCaller): ReadonlySet<string> | undefined {
    try {
      return fileParams(this.views, caller, alias);
    } catch {
      return undefined;
    }
  }

  loras(alias: string, caller: MediaCaller): string[] | undefined {
    return this.usable(alias, caller) ? this.deps.catalog.loras(alias) : undefined;
  }

  aliases(
    caller: MediaCaller,
  ): { id: string; backends: string[]; kind: JobView['results'][number]['kind'] | 'unknown' }[] {
    return this.deps.catalog
      .names()
      .filter((name) => this.usable(name, caller))
      .map((name) => {
        const model = this.deps.catalog.get(name)!;
        const first = model.candidates[0]?.alias;
        const outputClass = first?.output !== undefined ? first.workflow[first.output]?.class_type : undefined;
        return {
          id: name,
          backends: model.candidates.map((c) => c.backend),
          kind: outputClass ? outputKind(outputClass) : 'unknown',
        };
      });
  }

  /** Jobs still running in this process (for /health and the console). */
  get running(): number {
    return this.live.size;
  }

  private usable(alias: string, caller: MediaCaller): boolean {
    try {
      allowedCandidates(this.views, caller, alias, {});
      return true;
    } catch {
      return false;
    }
  }

  private async readInput(id: string, file: string): Promise<Buffer> {
    const bytes = await this.artifacts.read(id, file);
    if (!bytes) throw new Error(`input ${file} of job ${id} is missing`);
    return bytes;
  }

  private owned(id: string, caller: MediaCaller): Job | undefined {
    const job = this.store.get(id, this.now());
    return job && mayAccess(job.owner, caller.owner, caller.admin) ? job : undefined;
  }

  private viewOf(job: Job): JobView {
    return jobView(job, this.store.results(job.id), this.store.inputs(job.id), this.live.get(job.id));
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
