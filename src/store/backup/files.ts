/**
 * The gateway's data files a backup holds and a restore puts back: the three SQLite databases
 * (store.db and stats.db in store_dir, jobs.db in jobs_dir) and store_dir's secret.key, without
 * which the stored backend keys cannot be decrypted nor a user's key recognised. Media
 * artifacts (the files under jobs_dir) are not part of a backup.
 */
import { join } from 'node:path';
import { SECRET_FILE } from '../secret.ts';

export type DataFileKind = 'sqlite' | 'file';

export interface DataFile {
  /** The file's name, in its folder and in a backup folder alike. */
  name: string;
  /** Which configured folder it lives in. */
  folder: 'store_dir' | 'jobs_dir';
  kind: DataFileKind;
}

export const STORE_DB = 'store.db';
export const STATS_DB = 'stats.db';
export const JOBS_DB = 'jobs.db';

export const DATA_FILES: readonly DataFile[] = Object.freeze([
  { name: STORE_DB, folder: 'store_dir', kind: 'sqlite' },
  { name: STATS_DB, folder: 'store_dir', kind: 'sqlite' },
  { name: JOBS_DB, folder: 'jobs_dir', kind: 'sqlite' },
  { name: SECRET_FILE, folder: 'store_dir', kind: 'file' },
]);

/** A SQLite database's companions that must not outlive the file they belong to. */
export const SQLITE_COMPANIONS: readonly string[] = ['-wal', '-shm', '-journal'];

export interface DataDirs {
  storeDir: string;
  jobsDir: string;
}

/** Where `file` lives for the gateway configured with `dirs`. */
export function livePath(file: DataFile, dirs: DataDirs): string {
  return join(file.folder === 'store_dir' ? dirs.storeDir : dirs.jobsDir, file.name);
}

export function dataFileNamed(name: string): DataFile | undefined {
  return DATA_FILES.find((f) => f.name === name);
}

/** A time as a folder name's part: `2026-05-01T12-30-00-000Z` (no `:` or `.`, sorts by time). */
export function folderStamp(at: Date): string {
  return at.toISOString().replace(/[:.]/g, '-');
}
