/**
 * A media job as the gateway knows it (jobs.db's rows as objects, store.ts): its statuses, what
 * it was asked, its results and inputs, and the patches that move it on.
 */
import { randomBytes } from 'node:crypto';

export type JobStatus = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
export type ResultKind = 'image' | 'video' | 'audio' | 'mesh' | 'other';

export const JOB_TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(['done', 'failed', 'cancelled']);

/** A job id: `job_` and 32 lowercase hex digits (128 random bits). */
export const JOB_ID_RE = /^job_[0-9a-f]{32}$/;

export function newJobId(): string {
  return `job_${randomBytes(16).toString('hex')}`;
}

/** What a job was asked: never the bytes of its inputs, only their names and digests. */
export interface JobRequest {
  prompt?: string;
  params: Record<string, unknown>;
  inputs?: { param: string; name: string; sha256: string; mime?: string; bytes?: number }[];
}

export interface JobError {
  code: string;
  message: string;
}

/** What the compiler did to the workflow, for the job's caller to see. */
export interface JobSummary {
  removed?: string[];
  bypassed?: string[];
  /** Decimal text: exact beyond 2^53. */
  seed?: string | null;
  [key: string]: unknown;
}

export interface Job {
  id: string;
  owner: string;
  alias: string;
  status: JobStatus;
  backend: string | null;
  promptId: string | null;
  progress: number;
  node: string | null;
  error: JobError | null;
  summary: JobSummary | null;
  request: JobRequest;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  expiresAt: number;
}

export interface NewJob {
  /** Default: a fresh `newJobId()`. */
  id?: string;
  owner: string;
  alias: string;
  backend?: string | null;
  request: JobRequest;
  createdAt: number;
  expiresAt: number;
}

/** Fields `update` sets; an absent field is left alone, `null` clears it. */
export interface JobPatch {
  status?: JobStatus;
  backend?: string | null;
  promptId?: string | null;
  /** 0–100, clamped. */
  progress?: number;
  node?: string | null;
  error?: JobError | null;
  summary?: JobSummary | null;
}

export interface JobResult {
  n: number;
  kind: ResultKind;
  mime: string;
  /** Name inside the job's folder (`<n>.<ext>`). */
  file: string;
  bytes: number;
  sha256: string;
  width?: number;
  height?: number;
}

export interface JobInput {
  n: number;
  /** The request parameter it fills (`image`, `mask`, …). */
  param: string;
  mime: string;
  /** Name inside the job's folder (`in-<n>.<ext>`). */
  file: string;
  bytes: number;
  sha256: string;
}

/** A job a previous process left unfinished, now failed; interrupt it on its box if it has one. */
export interface OrphanJob {
  id: string;
  owner: string;
  /** The status it had: queued or running. */
  status: JobStatus;
  backend: string | null;
  promptId: string | null;
}

export interface ListOptions {
  /** Default 50, clamped to 1..500. */
  limit?: number;
  status?: JobStatus;
}

export const RECONCILE_ERROR: JobError = {
  code: 'gateway_restarted',
  message: 'The gateway stopped before this job finished; it was not resumed.',
};
