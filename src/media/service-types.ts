/**
 * The contract between the media routes (routes/media*.ts) and the media service
 * (media/service.ts): who asks, what a generation request is once the HTTP envelope is
 * off, and what a job looks like on the wire. Plain types; no I/O here.
 */
import type { JobStatus, ResultKind } from './jobs/job-types.ts';
import type { ThumbOptions } from './jobs/artifacts.ts';
import type { TicketUser } from '../scheduler/index.ts';

/** Who asks, for owner gating, allow-lists and the call log. */
export interface MediaCaller {
  /** The owner a job is filed under: `user:<id>`, `master`, or `ip:<address>` while the gateway is bootstrap-open. */
  owner: string;
  /** Admins (and the master key) see every job. */
  admin: boolean;
  /** The caller's allow-list; [] = everything. */
  allow: readonly string[];
  /** Call-log attribution. */
  source: string;
  userId: number | null;
  /** The user the scheduler charges the job's seconds to (fair share); absent = the anonymous user. */
  ticketUser?: TicketUser;
}

/** A file the client sent (upload, base64, data URI or fetched URL), already read. */
export interface MediaFile {
  bytes: Buffer;
  mime: string;
}

export interface GenerationSubmit {
  /** The generation alias (the request's `model`). */
  alias: string;
  prompt?: string;
  /** Workflow params, the envelope already stripped; integers beyond 2^53 arrive as bigint. */
  params: Record<string, unknown>;
  /** Files by the param they fill (image slots and any other file input). */
  files: Record<string, MediaFile>;
  /** The Images API's `image` / `image[]` and `mask`, placed onto the alias's image slots in order. */
  positional?: { images: MediaFile[]; mask?: MediaFile };
  /** For the call log: `/v1/images/generations`, `/v1/images/edits`, `/v1/generations`. */
  endpoint: string;
  requestId: string;
  /**
   * Ends the job's quota hold (the caller's admission, counted as running since the submit):
   * called once the job's call-log row is written, and by a submit that throws before any job
   * exists. Idempotent.
   */
  release?: () => void;
}

export interface JobResultView {
  n: number;
  kind: ResultKind;
  mime: string;
  /** Path of the file on this gateway: `/v1/jobs/<id>/result/<n>` (needs the caller's key). */
  url: string;
  bytes: number;
  sha256: string;
  width?: number;
  height?: number;
}

export interface JobInputView {
  n: number;
  param: string;
  mime: string;
  url: string;
  bytes: number;
  sha256: string;
}

/** `GET /v1/jobs/{id}`. Times are Unix seconds. */
export interface JobView {
  id: string;
  object: 'generation.job';
  model: string;
  status: JobStatus;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  expires_at: number;
  backend: string | null;
  /** 0–100. */
  progress: number;
  /** The node ComfyUI is running now (class type, or its title), while running. */
  node: string | null;
  /** 1-based place in the gateway's queue while parked; null otherwise. */
  queue_position: number | null;
  /** The seed used, as decimal text (exact beyond 2^53), once known. */
  seed: string | null;
  prompt: string | null;
  params: Record<string, unknown>;
  /** What the compiler did: pinned fields, removed and bypassed nodes, notes. */
  summary: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  results: JobResultView[];
  inputs: JobInputView[];
  /** A live preview image exists (`GET /v1/jobs/<id>/preview`). */
  preview: boolean;
}

/** The live events of one job (`GET /v1/jobs/{id}/events`), in order; a terminal one ends the stream. */
export type JobEvent =
  | { type: 'queued'; position: number | null }
  | { type: 'running'; backend: string }
  | { type: 'progress'; progress: number; node: string | null; step?: { value: number; max: number } }
  | { type: 'preview'; url: string }
  | { type: 'done' | 'failed' | 'cancelled'; job: JobView };

export interface FileAnswer {
  bytes: Buffer;
  mime: string;
  /** Download name (`<job>-<n>.<ext>`). */
  name: string;
}

/** What the routes call; every method that takes a caller gates by owner (undefined = 404). */
export interface MediaService {
  /**
   * Validates and files the job, then runs it in the background. Throws a GatewayError (400
   * naming the param, 404 for an alias the caller may not use or that does not exist) before
   * any job exists; resolves with the queued job.
   */
  submit(caller: MediaCaller, request: GenerationSubmit): Promise<JobView>;
  /** Resolves when the job reaches a terminal status; `signal` stops waiting (the job goes on). */
  settled(id: string, signal?: AbortSignal): Promise<JobView>;
  view(id: string, caller: MediaCaller): JobView | undefined;
  list(caller: MediaCaller, opts: { limit?: number; status?: JobStatus }): JobView[];
  cancel(id: string, caller: MediaCaller): Promise<JobView | undefined>;
  /** Live events from now on (the current state first); undefined when the job is not the caller's. */
  subscribe(id: string, caller: MediaCaller, listener: (event: JobEvent) => void): (() => void) | undefined;
  result(id: string, n: number, caller: MediaCaller, thumb?: ThumbOptions): Promise<FileAnswer | undefined>;
  input(id: string, n: number, caller: MediaCaller): Promise<FileAnswer | undefined>;
  preview(id: string, caller: MediaCaller): FileAnswer | undefined;
  /**
   * The params of `alias` a request may send a file for (its mapped inputs that load one: image
   * loaders, inputs with an upload flag, `Load…` classes), so that a route can refuse a bad
   * key before fetching anything; undefined = no such alias for this caller.
   */
  fileParams?(alias: string, caller: MediaCaller): ReadonlySet<string> | undefined;
  /** The LoRAs installed across the alias's backends; undefined = no such alias for this caller. */
  loras(alias: string, caller: MediaCaller): string[] | undefined;
  /** Generation aliases the caller may use, for `/v1/models?type=image`. */
  aliases(caller: MediaCaller): { id: string; backends: string[]; kind: ResultKind | 'unknown' }[];
}
