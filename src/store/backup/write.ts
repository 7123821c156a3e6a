/**
 * Writes one backup folder: each database copied by SQLite's online backup (better-sqlite3's
 * `db.backup()`, consistent while the gateway writes), secret.key copied, the copies checked
 * and described in `manifest.json`. Everything goes into a hidden temporary folder beside the
 * final one, renamed into place only when complete: a failed or interrupted backup leaves no
 * folder that looks like a backup.
 */
import { chmodSync, copyFileSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { ensurePrivateDir, PRIVATE_FILE_MODE, tightenSqliteCompanions } from '../private-files.ts';
import { describeFile, MANIFEST_FILE, MANIFEST_FORMAT, type Manifest } from './manifest.ts';

/** One database to copy: its name in the folder, and how to copy it to a path. */
export interface DatabaseSource {
  name: string;
  /** Writes a consistent copy of the database to `destination` (a path that does not exist yet). */
  backup(destination: string): Promise<unknown>;
}

export interface BackupPlan {
  databases: readonly DatabaseSource[];
  /** Plain files copied as they are (secret.key): name in the folder → path. */
  files: readonly { name: string; path: string }[];
  /** The folder to create; it must not exist. */
  into: string;
  gatewayVersion: string;
  takenBy: Manifest['taken_by'];
  label?: string;
  now?: () => Date;
}

export async function writeBackup(plan: BackupPlan): Promise<Manifest> {
  const createdAt = (plan.now ?? (() => new Date()))();
  if (existsSync(plan.into)) throw new Error(`${plan.into} exists already`);
  ensurePrivateDir(dirname(plan.into));
  const tmp = join(dirname(plan.into), `.${basename(plan.into)}.partial`);
  rmSync(tmp, { recursive: true, force: true });
  ensurePrivateDir(tmp);
  try {
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      created_at: createdAt.toISOString(),
      gateway_version: plan.gatewayVersion,
      taken_by: plan.takenBy,
      ...(plan.label ? { label: plan.label } : {}),
      files: [],
    };
    for (const source of plan.databases) {
      const copy = join(tmp, source.name);
      await source.backup(copy);
      chmodSync(copy, PRIVATE_FILE_MODE);
      selfContained(copy);
      manifest.files.push(await describeFile(tmp, source.name, 'sqlite'));
    }
    for (const file of plan.files) {
      copyFileSync(file.path, join(tmp, file.name));
      chmodSync(join(tmp, file.name), PRIVATE_FILE_MODE);
      manifest.files.push(await describeFile(tmp, file.name, 'file'));
    }
    writeFileSync(join(tmp, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
    renameSync(tmp, plan.into);
    return manifest;
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * A copy in rollback-journal mode, so that it is one self-contained file (no -wal or -shm
 * beside it, none made by reading it); the gateway turns WAL back on when it opens a restored one.
 */
function selfContained(path: string): void {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
  tightenSqliteCompanions(path);
}
