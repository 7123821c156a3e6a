/**
 * `<store_dir>/gateway.lock`: who holds the gateway's data files. A gateway takes it at start
 * and removes it at close; a restore takes it for the time it replaces files, and refuses to
 * start while a live process holds it. Created with O_EXCL (`wx`), so two takers never both
 * win a free lock. A lock whose process is gone (a crash, a kill -9, a reboot) is stale and is
 * taken over: the process is alive when `kill(pid, 0)` says so and, where /proc tells, it
 * started when the lock says (a pid reused after a reboot or in a new container is not it).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../private-files.ts';

export const LOCK_FILE = 'gateway.lock';

export interface LockHolder {
  pid: number;
  /** What took it: a running gateway, or a restore. */
  role: 'gateway' | 'restore';
  /** The process's start time in clock ticks since boot (Linux /proc), when known. */
  start?: string;
  host?: string;
  /** When it was taken (ISO). */
  since?: string;
  /** Tells this taker's lock from a later one's, so a release never removes another's. */
  token?: string;
}

/** The lock is held by a live process: nothing may replace the data files. */
export class LockHeldError extends Error {
  readonly holder: LockHolder;
  constructor(path: string, holder: LockHolder) {
    const what = holder.role === 'restore' ? 'a restore' : 'a gateway';
    super(
      `${what} (pid ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}) holds ${path}: stop it first ` +
        '(if that process is not a gateway, remove the lock file by hand)',
    );
    this.name = 'LockHeldError';
    this.holder = holder;
  }
}

export class GatewayLock {
  readonly path: string;
  readonly #token: string;
  #released = false;

  private constructor(path: string, token: string) {
    this.path = path;
    this.#token = token;
  }

  /**
   * Takes `<storeDir>/gateway.lock` for this process, creating `storeDir` if needed. A lock this
   * process holds already (another gateway built in the same process) or a stale one is taken
   * over; one a live process holds throws `LockHeldError`.
   */
  static acquire(storeDir: string, role: LockHolder['role'] = 'gateway'): GatewayLock {
    ensurePrivateDir(storeDir);
    const path = join(storeDir, LOCK_FILE);
    const token = randomBytes(8).toString('hex');
    const mine: LockHolder = {
      pid: process.pid,
      role,
      start: startTicks(process.pid),
      host: hostname(),
      since: new Date().toISOString(),
      token,
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      if (createExclusive(path, `${JSON.stringify(mine)}\n`)) return new GatewayLock(path, token);
      const holder = readHolder(path);
      if (holder === null) continue; // removed meanwhile: try again
      if (holder && holder.pid !== process.pid && isAlive(holder)) throw new LockHeldError(path, holder);
      removeIfUnchanged(path, holder);
    }
    throw new Error(`could not take ${path}: other processes keep taking it`);
  }

  /** Who holds `<storeDir>/gateway.lock` now: undefined when nobody does (no file, or a stale one). */
  static liveHolder(storeDir: string): LockHolder | undefined {
    const holder = readHolder(join(storeDir, LOCK_FILE));
    return holder && isAlive(holder) ? holder : undefined;
  }

  /** `build()`'s value; the lock is let go if it throws (what it was taken for never came to be). */
  guard<T>(build: () => T): T {
    try {
      return build();
    } catch (err) {
      this.release();
      throw err;
    }
  }

  /** The same for work that resolves later. */
  async guardAsync<T>(build: () => Promise<T>): Promise<T> {
    try {
      return await build();
    } catch (err) {
      this.release();
      throw err;
    }
  }

  /** Removes the lock if it is still this taker's (idempotent). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    const holder = readHolder(this.path);
    if (holder && holder.token === this.#token) removeIfUnchanged(this.path, holder);
  }
}

function createExclusive(path: string, text: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', PRIVATE_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * The lock's holder; null when there is no file; undefined for one that cannot be read as a
 * lock (half written by a crash, or not ours): stale, taken over.
 */
function readHolder(path: string): LockHolder | null | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isInteger(parsed.pid) || (parsed.pid as number) <= 0) return undefined;
    return { ...parsed, pid: parsed.pid as number, role: parsed.role === 'restore' ? 'restore' : 'gateway' };
  } catch {
    return undefined;
  }
}

/** Removes the lock unless it changed since `seen` was read (another taker's fresh lock stays). */
function removeIfUnchanged(path: string, seen: LockHolder | undefined): void {
  const now = readHolder(path);
  if (now === null) return;
  if (seen && now && (now.token !== seen.token || now.pid !== seen.pid)) return;
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** Whether the process the lock names runs now (and is the one that took it, where /proc tells). */
export function isAlive(holder: Pick<LockHolder, 'pid' | 'start'>): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    // EPERM: it exists, under another user
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (holder.start === undefined) return true;
  const now = startTicks(holder.pid);
  return now === undefined || now === holder.start;
}

/** Field 22 of /proc/<pid>/stat (start time since boot), undefined where there is no /proc. */
function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) is in parentheses and may hold spaces: count after its last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}
