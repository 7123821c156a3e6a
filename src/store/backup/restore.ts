/**
 * Puts a backup folder back into store_dir and jobs_dir, for `npm run restore`. Nothing is
 * touched until every file matches its manifest (size, sha256, integrity, schema version), and
 * nothing while a live process holds `<store_dir>/gateway.lock`; the restore holds it itself
 * meanwhile, so no gateway starts half way. Each file is first copied beside its target under a
 * temporary name and synced; then the file it replaces moves, with its -wal, -shm and -journal
 * (which would otherwise be replayed into the restored copy), into `replaced-<time>/` of the
 * same folder, and the copy is renamed into place.
 */
import { closeSync, copyFileSync, chmodSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../private-files.ts';
import { dataFileNamed, folderStamp, livePath, SQLITE_COMPANIONS, type DataDirs } from './files.ts';
import { GatewayLock, LOCK_FILE, LockHeldError } from './lock.ts';
import { verifyBackup, type Manifest } from './manifest.ts';

export interface RestorePlan {
  /** The backup folder (with its manifest.json). */
  from: string;
  dirs: DataDirs;
  /** File name → the newest schema version this gateway's migrations know. */
  newestKnown?: Record<string, number>;
  now?: () => Date;
}

export interface RestoreReport {
  manifest: Manifest;
  /** The files put in place. */
  restored: string[];
  /** Where the files they replaced went (one folder per data folder that had any). */
  replacedInto: string[];
}

export async function restoreBackup(plan: RestorePlan): Promise<RestoreReport> {
  const { storeDir } = plan.dirs;
  refuseIfHeld(storeDir);
  const manifest = await verifyBackup(plan.from, plan.newestKnown);
  const lock = GatewayLock.acquire(storeDir, 'restore');
  const staged: { from: string; to: string }[] = [];
  try {
    for (const f of manifest.files) {
      const to = livePath(dataFileNamed(f.name)!, plan.dirs);
      ensurePrivateDir(dirname(to));
      const temp = `${to}.restoring`;
      copyFileSync(join(plan.from, f.name), temp);
      chmodSync(temp, PRIVATE_FILE_MODE);
      syncFile(temp);
      staged.push({ from: temp, to });
    }
    const stamp = folderStamp((plan.now ?? (() => new Date()))());
    const replacedInto = new Set<string>();
    for (const { from, to } of staged) {
      const aside = join(dirname(to), `replaced-${stamp}`);
      for (const path of [to, ...SQLITE_COMPANIONS.map((s) => `${to}${s}`)]) {
        if (!existsSync(path)) continue;
        ensurePrivateDir(aside);
        renameSync(path, join(aside, path.slice(dirname(to).length + 1)));
        replacedInto.add(aside);
      }
      renameSync(from, to);
      syncFile(dirname(to));
    }
    return { manifest, restored: staged.map((s) => s.to), replacedInto: [...replacedInto] };
  } finally {
    for (const s of staged) rmSync(s.from, { force: true });
    lock.release();
  }
}

/** Throws `LockHeldError` when a live process (a running gateway, another restore) holds the store. */
export function refuseIfHeld(storeDir: string): void {
  const holder = GatewayLock.liveHolder(storeDir);
  if (holder) throw new LockHeldError(join(storeDir, LOCK_FILE), holder);
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
