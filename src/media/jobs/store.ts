/**
 * jobs.db: media generation jobs (image, video, audio, mesh on ComfyUI boxes), owner-gated and
 * with a TTL, plus the results they made and the inputs uploaded for them. The only place with
 * SQL for jobs; the files themselves live beside it (artifacts.ts).
 *
 * Lifecycle: queued → running → done | failed | cancelled. The first terminal status wins: a
 * terminal row never changes again (a finish never overwrites a cancel, nor a cancel a finish).
 * A running job may go back to queued (to be retried on another box).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Statement } from 'better-sqlite3';
import { JOBS_DB } from '../../store/backup/files.ts';
import { openDatabase, type Db } from '../../store/db.ts';
import {
  JOB_ID_RE,
  newJobId,
  RECONCILE_ERROR,
  type Job,
  type JobError,
  type JobInput,
  type JobPatch,
  type JobRequest,
  type JobResult,
  type JobStatus,
  type JobSummary,
  type ListOptions,
  type NewJob,
  type OrphanJob,
  type ResultKind,
} from './job-types.ts';
import { JOBS_MIGRATIONS } from './migrations.ts';

interface Row {
  id: string;
  owner: string;
  alias: string;
  status: JobStatus;
  backend: string | null;
  prompt_id: string | null;
  progress: number;
  node: string | null;
  error: string | null;
  summary: string | null;
  request: string;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
  expires_at: number;
}

interface ResultRow {
  n: number;
  kind: ResultKind;
  mime: string;
  file: string;
  bytes: number;
  sha256: string;
  width: number | null;
  height: number | null;
}

interface UpdateParams {
  id: string;
  now: number;
  status: JobStatus | null;
  progress: number | null;
  has_backend: number;
  backend: string | null;
  has_prompt_id: number;
  prompt_id: string | null;
  has_node: number;
  node: string | null;
  has_error: number;
  error: string | null;
  has_summary: number;
  summary: string | null;
}

const UNFINISHED = `status IN ('queued','running')`;
const TERMINAL_SQL = `('done','failed','cancelled')`;

export class JobStore {
  readonly #db: Db;
  readonly #insert: Statement<[string, string, string, string | null, string, number, number, number]>;
  readonly #get: Statement<[string, number], Row>;
  readonly #update: Statement<[UpdateParams]>;
  readonly #list = new Map<string, Statement<unknown[], Row>>();
  readonly #addResult: Statement<
    [string, number, string, string, string, number, string, number | null, number | null]
  >;
  readonly #results: Statement<[string], ResultRow>;
  readonly #addInput: Statement<[string, number, string, string, string, number, string]>;
  readonly #inputs: Statement<[string], JobInput>;
  readonly #expired: Statement<[number], { id: string }>;
  readonly #delete: Statement<[string]>;
  readonly #reconcile: (now: number) => OrphanJob[];

  /** Opens (creating and migrating if needed) `<jobsDir>/jobs.db`. */
  static open(jobsDir: string): JobStore {
    mkdirSync(jobsDir, { recursive: true });
    return new JobStore(openDatabase(join(jobsDir, JOBS_DB), JOBS_MIGRATIONS));
  }

  constructor(db: Db) {
    this.#db = db;
    this.#insert =
      db.prepare(`INSERT INTO jobs (id, owner, alias, status, backend, request, created_at, updated_at, expires_at)
      VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?)`);
    this.#get = db.prepare('SELECT * FROM jobs WHERE id = ? AND expires_at > ?');
    // One statement, no read first: a field moves only when its flag is set, and only an
    // unfinished row moves at all (the first terminal status stays).
    this.#update = db.prepare(`UPDATE jobs SET
        status      = COALESCE(@status, status),
        progress    = CASE WHEN @status = 'done' THEN 100 ELSE COALESCE(@progress, progress) END,
        backend     = CASE WHEN @has_backend THEN @backend ELSE backend END,
        prompt_id   = CASE WHEN @has_prompt_id THEN @prompt_id ELSE prompt_id END,
        node        = CASE WHEN @has_node THEN @node ELSE node END,
        error       = CASE WHEN @has_error THEN @error ELSE error END,
        summary     = CASE WHEN @has_summary THEN @summary ELSE summary END,
        started_at  = CASE WHEN @status = 'running' AND started_at IS NULL THEN @now ELSE started_at END,
        finished_at = CASE WHEN @status IN ${TERMINAL_SQL} THEN @now ELSE finished_at END,
        updated_at  = @now
      WHERE id = @id AND ${UNFINISHED}`);
    this.#addResult = db.prepare(`INSERT INTO job_results (job_id, n, kind, mime, file, bytes, sha256, width, height)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#results = db.prepare(
      'SELECT n, kind, mime, file, bytes, sha256, width, height FROM job_results WHERE job_id = ? ORDER BY n',
    );
    this.#addInput = db.prepare(
      `INSERT INTO job_inputs (job_id, n, param, mime, file, bytes, sha256) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#inputs = db.prepare('SELECT n, param, mime, file, bytes, sha256 FROM job_inputs WHERE job_id = ? ORDER BY n');
    this.#expired = db.prepare('SELECT id FROM jobs WHERE expires_at <= ? ORDER BY expires_at');
    this.#delete = db.prepare('DELETE FROM jobs WHERE id = ?');
    const unfinished = db.prepare<
      [],
      { id: string; owner: string; status: JobStatus; backend: string | null; prompt_id: string | null }
    >(`SELECT id, owner, status, backend, prompt_id FROM jobs WHERE ${UNFINISHED} ORDER BY created_at`);
    const failUnfinished = db.prepare<[string, number, number]>(
      `UPDATE jobs SET status = 'failed', error = ?, node = NULL, finished_at = ?, updated_at = ? WHERE ${UNFINISHED}`,
    );
    this.#reconcile = db.transaction((now: number) => {
      const rows = unfinished.all();
      failUnfinished.run(JSON.stringify(RECONCILE_ERROR), now, now);
      return rows.map((r) => ({
        id: r.id,
        owner: r.owner,
        status: r.status,
        backend: r.backend,
        promptId: r.prompt_id,
      }));
    });
  }

  /** Inserts a queued job and returns it. */
  create(job: NewJob): Job {
    const id = job.id ?? newJobId();
    if (!JOB_ID_RE.test(id)) throw new TypeError(`invalid job id ${JSON.stringify(id)}`);
    const request = JSON.stringify(job.request, noBytes);
    this.#insert.run(
      id,
      job.owner,
      job.alias,
      job.backend ?? null,
      request,
      job.createdAt,
      job.createdAt,
      job.expiresAt,
    );
    return {
      id,
      owner: job.owner,
      alias: job.alias,
      status: 'queued',
      backend: job.backend ?? null,
      promptId: null,
      progress: 0,
      node: null,
      error: null,
      summary: null,
      request: JSON.parse(request) as JobRequest,
      createdAt: job.createdAt,
      updatedAt: job.createdAt,
      startedAt: null,
      finishedAt: null,
      expiresAt: job.expiresAt,
    };
  }

  /** The job, unless it expired (or never was). */
  get(id: string, now: number): Job | undefined {
    const row = this.#get.get(id, now);
    return row && fromRow(row);
  }

  /** Unexpired jobs of `owner` (every owner's for `null`, the admins' view), newest first. */
  list(owner: string | null, opts: ListOptions, now: number): Job[] {
    const limit = Math.min(500, Math.max(1, Math.floor(opts.limit ?? 50)));
    const key = `${owner === null ? '' : 'o'}${opts.status === undefined ? '' : 's'}`;
    let stmt = this.#list.get(key);
    if (!stmt) {
      const where = ['expires_at > ?'];
      if (owner !== null) where.push('owner = ?');
      if (opts.status !== undefined) where.push('status = ?');
      stmt = this.#db.prepare<unknown[], Row>(
        `SELECT * FROM jobs WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`,
      );
      this.#list.set(key, stmt);
    }
    const args: unknown[] = [now];
    if (owner !== null) args.push(owner);
    if (opts.status !== undefined) args.push(opts.status);
    args.push(limit);
    return stmt.all(...args).map(fromRow);
  }

  /**
   * Moves an unfinished job on (one UPDATE, no read: cheap enough for every progress tick).
   * False when the job is gone or already terminal: then nothing changed.
   */
  update(id: string, patch: JobPatch, now: number = Date.now()): boolean {
    const has = (k: keyof JobPatch) => (patch[k] !== undefined ? 1 : 0);
    const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
    const progress =
      patch.progress === undefined || !Number.isFinite(patch.progress)
        ? null
        : Math.min(100, Math.max(0, patch.progress));
    return (
      this.#update.run({
        id,
        now,
        status: patch.status ?? null,
        progress,
        has_backend: has('backend'),
        backend: patch.backend ?? null,
        has_prompt_id: has('promptId'),
        prompt_id: patch.promptId ?? null,
        has_node: has('node'),
        node: patch.node ?? null,
        has_error: has('error'),
        error: json(patch.error),
        has_summary: has('summary'),
        summary: json(patch.summary),
      }).changes > 0
    );
  }

  addResult(id: string, r: JobResult): void {
    this.#addResult.run(id, r.n, r.kind, r.mime, r.file, r.bytes, r.sha256, r.width ?? null, r.height ?? null);
  }

  results(id: string): JobResult[] {
    return this.#results.all(id).map(({ width, height, ...r }) => ({
      ...r,
      ...(width === null ? {} : { width }),
      ...(height === null ? {} : { height }),
    }));
  }

  addInput(id: string, i: JobInput): void {
    this.#addInput.run(id, i.n, i.param, i.mime, i.file, i.bytes, i.sha256);
  }

  inputs(id: string): JobInput[] {
    return this.#inputs.all(id);
  }

  /** Ids of the jobs whose TTL has passed (their rows and files are for `Artifacts.prune`). */
  expired(now: number): string[] {
    return this.#expired.all(now).map((r) => r.id);
  }

  /** Deletes the job with its results and inputs rows. */
  delete(id: string): boolean {
    return this.#delete.run(id).changes > 0;
  }

  /**
   * At start-up, nothing of a previous process is running here any more: every queued or
   * running job is marked failed (`RECONCILE_ERROR`). Returns them with their backend and
   * ComfyUI prompt id, so that the caller can interrupt them on the box.
   */
  reconcile(now: number): OrphanJob[] {
    return this.#reconcile(now);
  }

  /** A consistent copy of jobs.db at `destination`, taken on this connection (SQLite's online backup). */
  backupTo(destination: string): Promise<unknown> {
    return this.#db.backup(destination);
  }

  close(): void {
    this.#db.close();
  }
}

/** JSON replacer for a job's request: bytes belong in files, never in the row. */
function noBytes(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array || value instanceof ArrayBuffer)
    throw new TypeError('a job request must not hold bytes');
  if (
    value !== null &&
    typeof value === 'object' &&
    (value as { type?: unknown }).type === 'Buffer' &&
    Array.isArray((value as { data?: unknown }).data)
  ) {
    throw new TypeError('a job request must not hold bytes'); // a Buffer after its own toJSON
  }
  if (typeof value === 'string' && value.length > 1024 && /^data:[^,]*;base64,/.test(value)) {
    throw new TypeError('a job request must not hold bytes (data: URL)');
  }
  return value;
}

function fromRow(row: Row): Job {
  return {
    id: row.id,
    owner: row.owner,
    alias: row.alias,
    status: row.status,
    backend: row.backend,
    promptId: row.prompt_id,
    progress: row.progress,
    node: row.node,
    error: row.error === null ? null : (JSON.parse(row.error) as JobError),
    summary: row.summary === null ? null : (JSON.parse(row.summary) as JobSummary),
    request: JSON.parse(row.request) as JobRequest,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    expiresAt: row.expires_at,
  };
}
