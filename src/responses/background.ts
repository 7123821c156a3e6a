/**
 * Background Responses (`background: true`): the call is answered at once with status
 * `queued`, and runs as the gateway's own client — a streamed `POST /v1/responses` to itself
 * over loopback, with the caller's own key (so auth, allow-list, quota, the scheduler with its
 * parking, failover and the call log apply unchanged) and a marker only this process knows,
 * which lets that call park up to `async_park_timeout_s` and carry the response's id. Its
 * events are kept for `?stream=true` followers and written with the final Response to the store.
 * Every event carries the response's one id, the gateway's (event-id.ts).
 * Cancelling aborts that request: the proxy sees its client leave, aborts upstream and frees
 * the slot. The store keeps the first terminal status (a cancel racing a finish: whichever
 * came first).
 */
import { request, type Dispatcher } from 'undici';
import { SseSplitter } from '../wire/sse.ts';
import { TERMINAL_STATUSES, type ResponsesRepo, type ResponseStatus } from '../store/responses-repo.ts';
import { withResponseId } from './event-id.ts';
import { historyAfter } from './items.ts';

export interface BackgroundDeps {
  repo: ResponsesRepo;
  now: () => number;
  /** The gateway's own base URL (loopback), known once it listens. */
  selfUrl: () => string;
  /** Headers that mark the loopback call as the gateway's own (see `internalHeaders`). */
  internalHeaders: (id: string, createdAt: number) => Record<string, string>;
  dispatcher?: Dispatcher;
  log: { warn(obj: object, msg: string): void };
}

export interface BackgroundJob {
  id: string;
  createdAt: number;
  /** The client's body (background/stream/store are set by the runner). */
  body: Record<string, unknown>;
  /** The client's credential and attribution headers, passed on as they came. */
  headers: Record<string, string>;
  /** Earlier turns (`previous_response_id`), for the stored history. */
  history: unknown[];
  /** The Response as the client was first told (status queued). */
  queued: Record<string, unknown>;
  /**
   * Ends the holds taken at create, on its user's quota and its place in the scheduler (admission.ts):
   * called once the run's own call arrives (it is admitted and queued itself then), or the run ended.
   */
  release?: () => void;
}

/** A follower's view: the events so far, then each one as it comes (null = the end). */
type Listener = (frame: string | null) => void;

interface Running {
  abort: AbortController;
  frames: string[];
  listeners: Set<Listener>;
}

export class BackgroundResponses {
  private readonly running = new Map<string, Running>();
  /**
   * Runs started whose loopback call has not reached the scheduler yet, each with its holds on the
   * user's quota and a place in the scheduler (admission.ts), let go when the call arrives.
   */
  private readonly unarrived = new Map<string, () => void>();

  constructor(private readonly deps: BackgroundDeps) {}

  /** Starts the job (its row must exist, status queued). */
  start(job: BackgroundJob): void {
    const run: Running = { abort: new AbortController(), frames: [], listeners: new Set() };
    this.running.set(job.id, run);
    this.unarrived.set(job.id, job.release ?? noop);
    void this.run(job, run).catch((err: unknown) => {
      this.deps.log.warn({ err, response: job.id }, 'background response failed');
      this.finish(
        job,
        run,
        'failed',
        failed(job.queued, 'server_error', 'The background run failed; see the gateway log.'),
      );
    });
  }

  /** The run's loopback call is about to ask the scheduler for its slot (same tick). */
  arrived(id: string): void {
    this.letGo(id);
  }

  isRunning(id: string): boolean {
    return this.running.has(id);
  }

  /** Cancels a running job: true when it was running (its row is cancelled now). */
  cancel(id: string, response: Record<string, unknown>, history: unknown[]): boolean {
    const run = this.running.get(id);
    if (!run) return false;
    const cancelled = Object.assign({}, response, { status: 'cancelled' });
    this.deps.repo.update(id, 'cancelled', cancelled, history, run.frames.join(''), this.deps.now());
    this.end(id, run);
    run.abort.abort();
    return true;
  }

  /** Follows a running job: the frames so far, then `listener` per frame; undefined when it is not running. */
  follow(id: string, listener: Listener): { frames: readonly string[]; stop: () => void } | undefined {
    const run = this.running.get(id);
    if (!run) return undefined;
    run.listeners.add(listener);
    return { frames: run.frames.slice(), stop: () => run.listeners.delete(listener) };
  }

  /**
   * Shutdown: every run is aborted (freeing its slot upstream) and its row failed, as a
   * restart would find it. Not "cancelled": nobody asked for that.
   */
  close(): void {
    const runs = [...this.running];
    this.running.clear();
    for (const id of [...this.unarrived.keys()]) this.letGo(id);
    for (const [, run] of runs) {
      run.abort.abort();
      for (const l of run.listeners) l(null);
    }
    this.deps.repo.failUnfinished(this.deps.now());
  }

  private async run(job: BackgroundJob, run: Running): Promise<void> {
    const body = Object.assign({}, job.body, { background: false, stream: true, store: false });
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.deps.selfUrl()}/v1/responses`, {
        method: 'POST',
        headers: Object.assign(
          { 'content-type': 'application/json' },
          job.headers,
          this.deps.internalHeaders(job.id, job.createdAt),
        ),
        body: JSON.stringify(body),
        signal: run.abort.signal,
        dispatcher: this.deps.dispatcher,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    } catch (err) {
      if (run.abort.signal.aborted) return; // cancelled: the row says so already
      throw err;
    }
    if (res.statusCode !== 200) {
      const text = await res.body.text().catch(() => '');
      const error = errorOf(text, res.statusCode);
      this.finish(job, run, 'failed', failed(job.queued, error.code, error.message));
      return;
    }
    let status: ResponseStatus = 'queued';
    let latest = job.queued;
    const splitter = new SseSplitter();
    try {
      for await (const chunk of res.body) {
        for (const ev of splitter.push(chunk as Buffer)) {
          if (!ev.data) continue;
          // deltas carry no Response: only lifecycle and error events are parsed (and given the run's id)
          const { frame, payload } = withResponseId(ev, job.id);
          run.frames.push(frame);
          for (const l of run.listeners) l(frame);
          const seen = payload && this.learn(ev.event, payload);
          if (seen) latest = seen;
          const next = statusOf(ev.event);
          if (next !== status && status === 'queued')
            this.deps.repo.update(
              job.id,
              'in_progress',
              Object.assign({}, latest, { status: 'in_progress' }),
              job.history,
              null,
              this.deps.now(),
            );
          status = next;
        }
      }
    } catch (err) {
      if (run.abort.signal.aborted) return;
      throw err;
    }
    if (!TERMINAL_STATUSES.has(status)) {
      status = 'failed';
      latest = failed(latest, 'stream_interrupted', 'The backend stopped before the response finished.');
    }
    this.finish(job, run, status, latest);
  }

  /** The Response an event carries (lifecycle events) or an error event made into one. */
  private learn(type: string | undefined, parsed: Record<string, unknown>): Record<string, unknown> | undefined {
    const payload = parsed as { response?: Record<string, unknown>; code?: string; message?: string };
    if (payload.response && typeof payload.response === 'object') return payload.response;
    if (type !== 'error') return undefined;
    return { error: { code: payload.code ?? 'server_error', message: payload.message ?? 'error' }, status: 'failed' };
  }

  private finish(job: BackgroundJob, run: Running, status: ResponseStatus, response: Record<string, unknown>): void {
    if (this.running.get(job.id) !== run) return; // cancelled meanwhile
    const history = historyAfter(job.history, job.body.input, response);
    const final = Object.assign({}, job.queued, response, { id: job.id, status, background: true });
    this.deps.repo.update(job.id, status, final, history, run.frames.join(''), this.deps.now());
    this.end(job.id, run);
  }

  /** The run's call arrived, or the run ended: no longer awaited, its holds released. */
  private letGo(id: string): void {
    const release = this.unarrived.get(id);
    this.unarrived.delete(id);
    release?.();
  }

  private end(id: string, run: Running): void {
    this.running.delete(id);
    this.letGo(id);
    for (const l of run.listeners) l(null);
    run.listeners.clear();
  }
}

const noop = () => {};

function statusOf(type: string | undefined): ResponseStatus {
  if (type === 'response.completed') return 'completed';
  if (type === 'response.incomplete') return 'incomplete';
  if (type === 'response.failed' || type === 'error') return 'failed';
  return 'in_progress';
}

function failed(response: Record<string, unknown>, code: string, message: string): Record<string, unknown> {
  return Object.assign({}, response, { status: 'failed', error: { code, message } });
}

function errorOf(text: string, status: number): { code: string; message: string } {
  try {
    const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof parsed.error?.message === 'string')
      return { code: String(parsed.error.code ?? status), message: parsed.error.message };
  } catch {
    /* not JSON */
  }
  return { code: String(status), message: text.slice(0, 500) || `HTTP ${status}` };
}
