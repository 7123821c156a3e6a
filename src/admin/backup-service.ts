/**
 * POST /admin/api/backup's service: one backup at a time (a second while one runs is a 409),
 * into a new folder `backup-<time>[-<label>]` under the configured `backup_dir`. The client
 * names at most a short label, never a path.
 */
import { join, resolve } from 'node:path';
import { badRequest, GatewayError } from '../errors.ts';
import { folderStamp } from '../store/backup/files.ts';
import type { Manifest } from '../store/backup/manifest.ts';
import { writeBackup, type DatabaseSource } from '../store/backup/write.ts';

/** A label: lower-case letters, digits and dashes, at most 40 (it becomes part of a folder name). */
export const LABEL_RE = /^[a-z0-9-]{1,40}$/;

export interface BackupServiceDeps {
  /** The gateway's open databases, each copied on its own connection. */
  databases: () => readonly DatabaseSource[];
  /** Plain files copied as they are (secret.key). */
  files: () => readonly { name: string; path: string }[];
  /** The folder backups go in (`backup_dir`, resolved). */
  dir: () => string;
  gatewayVersion: string;
  now?: () => Date;
}

export interface BackupResult {
  /** The backup's folder name under `backup_dir`. */
  folder: string;
  path: string;
  manifest: Manifest;
}

export interface BackupStatus {
  running: boolean;
  /** The last backup that completed since start, if any. */
  last?: { folder: string; created_at: string };
}

export class BackupService {
  readonly #deps: BackupServiceDeps;
  #running = false;
  #last?: BackupStatus['last'];

  constructor(deps: BackupServiceDeps) {
    this.#deps = deps;
  }

  status(): BackupStatus {
    return { running: this.#running, ...(this.#last ? { last: this.#last } : {}) };
  }

  /** Takes a backup; `body` is the request's (nothing, or `{ label }`). */
  async run(body: unknown): Promise<BackupResult> {
    const label = labelOf(body);
    if (this.#running) {
      throw new GatewayError({
        status: 409,
        code: 'backup_in_progress',
        message: 'A backup is being written now; ask again when it is done.',
      });
    }
    this.#running = true;
    try {
      const now = (this.#deps.now ?? (() => new Date()))();
      const folder = `backup-${folderStamp(now)}${label ? `-${label}` : ''}`;
      const path = join(resolve(this.#deps.dir()), folder);
      let manifest: Manifest;
      try {
        manifest = await writeBackup({
          databases: this.#deps.databases(),
          files: this.#deps.files(),
          into: path,
          gatewayVersion: this.#deps.gatewayVersion,
          takenBy: 'gateway',
          label,
          now: () => now,
        });
      } catch (err) {
        throw new GatewayError({
          status: 500,
          code: 'backup_failed',
          message: `The backup could not be written: ${(err as Error).message}`,
        });
      }
      this.#last = { folder, created_at: manifest.created_at };
      return { folder, path, manifest };
    } finally {
      this.#running = false;
    }
  }
}

/** The label of a request body: none for an empty body, else `{ label }` and nothing more. */
function labelOf(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== 'object' || Array.isArray(body)) throw badRequest('The body must be a JSON object.');
  for (const key of Object.keys(body)) {
    if (key !== 'label') throw badRequest(`Unknown field \`${key}\`; the body may hold only \`label\`.`, key);
  }
  const { label } = body as { label?: unknown };
  if (label === undefined || label === null) return undefined;
  if (typeof label !== 'string' || !LABEL_RE.test(label)) {
    throw badRequest(
      '`label` must be 1 to 40 lower-case letters, digits or dashes (it becomes part of the folder name).',
      'label',
      'invalid_label',
    );
  }
  return label;
}
