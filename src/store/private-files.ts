/**
 * The gateway's data files are its owner's only: store.db, stats.db, jobs.db, their -wal and
 * -shm companions and secret.key are 0600, their folders 0700. Created so (a umask can only
 * narrow a mode), and tightened when an older version left them readable by group or others.
 * SQLite creates a database's -wal and -shm with the database file's own mode, so a 0600
 * database gets 0600 companions.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and its parents) 0700; an existing one open to group or others is tightened to 0700. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  tighten(dir, PRIVATE_DIR_MODE);
}

/** Creates an empty `file` 0600 if it is missing; an existing one open to group or others is tightened to 0600. */
export function ensurePrivateFile(file: string): void {
  try {
    closeSync(openSync(file, 'wx', PRIVATE_FILE_MODE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  tighten(file, PRIVATE_FILE_MODE);
}

/** A database's -wal and -shm, when they exist, tightened to 0600. */
export function tightenSqliteCompanions(file: string): void {
  for (const suffix of ['-wal', '-shm', '-journal']) {
    if (existsSync(`${file}${suffix}`)) tighten(`${file}${suffix}`, PRIVATE_FILE_MODE);
  }
}

function tighten(path: string, mode: number): void {
  if ((statSync(path).mode & 0o777 & ~mode) !== 0) chmodSync(path, mode);
}
