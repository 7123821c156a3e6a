/** What a media job's run is given (its deps and its plan) and what it comes to. */
import type { Logger } from 'pino';
import type { BackendRegistry } from '../backends/registry.ts';
import type { Scheduler, SchedulerRejection, TicketUser } from '../scheduler/index.ts';
import type { ObjectInfo } from './compiler/index.ts';
import type { Artifacts } from './jobs/artifacts.ts';
import type { ComfyClients } from './comfy/clients.ts';
import type { GenerationCandidate } from './generation-catalog.ts';
import type { JobError } from './jobs/job-types.ts';
import type { JobStore } from './jobs/store.ts';
import type { MediaWake } from './wake-lease.ts';

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
  /** Wakes sleeping boxes a job needs (wake-lease.ts); absent = a job for down boxes fails at once. */
  wake?: MediaWake;
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

/** How one attempt on one box ended, for the failover loop. */
export type Attempt =
  | { kind: 'done' }
  | { kind: 'cancelled' }
  /** Try another box; `execution`: the workflow itself failed there (failover once). */
  | { kind: 'failover'; error: JobError; execution?: boolean }
  | { kind: 'fatal'; error: JobError };
