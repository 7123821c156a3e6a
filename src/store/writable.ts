/**
 * Whether the store can take a write now, for GET /health/ready: its folder is writable with
 * room left, and its database is not read-only and can take the write lock. Nothing is written:
 * the probe opens a write transaction and rolls it back.
 */
import { accessSync, constants, statfsSync } from 'node:fs';
import type { Db } from './db.ts';

/** Below this much free space in the store's folder the gateway is not ready (the call log would fail). */
export const MIN_FREE_BYTES = 16 * 1024 * 1024;

export interface WritableVerdict {
  ok: boolean;
  /** Why not, in words that name no path (the answer is public). */
  reason?: string;
  freeBytes?: number;
}

export function storeWritable(db: Db, dir: string, minFreeBytes = MIN_FREE_BYTES): WritableVerdict {
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    return { ok: false, reason: 'the store folder (store_dir) is not writable' };
  }
  const freeBytes = freeSpace(dir);
  if (freeBytes !== undefined && freeBytes < minFreeBytes) {
    const mib = (freeBytes / 1048576).toFixed(1);
    return { ok: false, reason: `the store folder (store_dir) has ${mib} MiB free`, freeBytes };
  }
  if (db.readonly) return { ok: false, reason: 'the store database is open read-only', freeBytes };
  // another process holding the write lock must not stall the event loop for the busy timeout
  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    return { ok: false, reason: `the store database cannot be written: ${(err as Error).message}`, freeBytes };
  } finally {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeout))}`);
  }
  return { ok: true, freeBytes };
}

function freeSpace(dir: string): number | undefined {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}
