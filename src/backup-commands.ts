/**
 * What `npm run backup` and `npm run restore` do, from outside the gateway. The backup opens
 * each database read-only and copies it with SQLite's online backup in one step (one read
 * transaction: in WAL mode a running gateway keeps writing meanwhile, and the copy is the
 * database as of that moment). The restore is store/backup/restore.ts.
 */
import { existsSync, readdirSync, rmdirSync } from 'node:fs';
import { resolve } from 'node:path';
import Database from 'better-sqlite3';
import { dataCommandUsage, parseDataCommand, type DataCommandName } from './backup-cli.ts';
import { loadBootConfig } from './config/load.ts';
import { formatProblems } from './config/schema.ts';
import { JOBS_MIGRATIONS } from './media/jobs/migrations.ts';
import { packageVersion } from './package-version.ts';
import { DATA_FILES, JOBS_DB, livePath, STATS_DB, STORE_DB, type DataDirs } from './store/backup/files.ts';
import { LockHeldError } from './store/backup/lock.ts';
import { BackupInvalidError } from './store/backup/manifest.ts';
import { restoreBackup } from './store/backup/restore.ts';
import { writeBackup, type DatabaseSource } from './store/backup/write.ts';
import { STATS_MIGRATIONS } from './store/calls-migrations.ts';
import { STORE_MIGRATIONS } from './store/migrations.ts';

/** Pages per backup step: all of them, so the copy is one read transaction a writer elsewhere cannot restart. */
const ALL_PAGES = 0x7fffffff;

export interface CommandIo {
  env: NodeJS.ProcessEnv;
  out: (line: string) => void;
  err: (line: string) => void;
}

/** Runs `npm run <name> -- <argv>`; the exit code (0 done, 1 refused or failed, 2 a usage mistake). */
export async function runDataCommand(name: DataCommandName, argv: readonly string[], io: CommandIo): Promise<number> {
  const command = parseDataCommand(argv);
  if (command.kind === 'help') return (io.out(dataCommandUsage(name)), 0);
  if (command.kind === 'error') return (io.err(`${name}: ${command.message} (see --help)`), 2);
  const dirs = configuredDirs(command.config, io.env);
  if ('problem' in dirs) return (io.err(`${name}: ${dirs.problem}`), 1);
  try {
    if (name === 'backup') await backupCommand(resolve(command.dir), dirs, io);
    else await restoreCommand(resolve(command.dir), dirs, io);
    return 0;
  } catch (err) {
    const known = err instanceof LockHeldError || err instanceof BackupInvalidError || err instanceof CommandError;
    io.err(`${name}: ${known ? (err as Error).message : ((err as Error).stack ?? String(err))}`);
    return 1;
  }
}

class CommandError extends Error {}

/** store_dir and jobs_dir of the config the server would read with the same flag and environment. */
export function configuredDirs(flag: string | undefined, env: NodeJS.ProcessEnv): DataDirs | { problem: string } {
  const path = resolve(flag ?? env.LLM_GATEWAY_CONFIG ?? 'config.yaml');
  const boot = loadBootConfig(path, env, { explicit: flag !== undefined || env.LLM_GATEWAY_CONFIG !== undefined });
  if (!boot.result.ok) return { problem: `invalid configuration in ${path}:\n${formatProblems(boot.result.problems)}` };
  return { storeDir: resolve(boot.result.config.store_dir), jobsDir: resolve(boot.result.config.jobs_dir) };
}

async function backupCommand(into: string, dirs: DataDirs, io: CommandIo): Promise<void> {
  if (existsSync(into)) {
    if (readdirSync(into).length) throw new CommandError(`${into} is not empty: name a new or empty folder`);
    rmdirSync(into);
  }
  const storeFile = livePath(
    DATA_FILES.find((f) => f.name === STORE_DB)!,
    dirs,
  );
  if (!existsSync(storeFile)) throw new CommandError(`no ${STORE_DB} in ${dirs.storeDir}: nothing to back up`);
  const databases: DatabaseSource[] = [];
  const files: { name: string; path: string }[] = [];
  for (const f of DATA_FILES) {
    const path = livePath(f, dirs);
    if (!existsSync(path)) {
      io.out(`skipped ${f.name}: there is none at ${path}`);
      continue;
    }
    if (f.kind === 'sqlite') databases.push({ name: f.name, backup: (to) => readOnlyBackup(path, to) });
    else files.push({ name: f.name, path });
  }
  const manifest = await writeBackup({ databases, files, into, gatewayVersion: packageVersion(), takenBy: 'cli' });
  for (const f of manifest.files) io.out(`${f.name}: ${f.bytes} bytes, sha256 ${f.sha256}${facts(f)}`);
  io.out(`backup written to ${into}`);
}

async function restoreCommand(from: string, dirs: DataDirs, io: CommandIo): Promise<void> {
  const newestKnown = {
    [STORE_DB]: newest(STORE_MIGRATIONS),
    [STATS_DB]: newest(STATS_MIGRATIONS),
    [JOBS_DB]: newest(JOBS_MIGRATIONS),
  };
  const report = await restoreBackup({ from, dirs, newestKnown });
  for (const path of report.restored) io.out(`restored ${path}`);
  for (const path of report.replacedInto) io.out(`the files it replaced are in ${path}`);
  io.out(`restored the backup of ${report.manifest.created_at}; start the gateway`);
}

async function readOnlyBackup(path: string, to: string): Promise<void> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    await db.backup(to, { progress: () => ALL_PAGES });
  } finally {
    db.close();
  }
}

function facts(f: { schema_version?: number; integrity?: string }): string {
  return f.schema_version === undefined ? '' : `, schema ${f.schema_version}, integrity ${f.integrity}`;
}

function newest(migrations: readonly { version: number }[]): number {
  return Math.max(0, ...migrations.map((m) => m.version));
}
