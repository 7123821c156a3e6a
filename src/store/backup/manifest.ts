/**
 * A backup folder's `manifest.json`: when it was taken, by which gateway version, and per file
 * its size, sha256, schema version (the database's `user_version`, which its migrations keep)
 * and the `PRAGMA integrity_check` verdict of the copy. Also the checks a restore runs on a
 * folder before it touches anything.
 */
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { dataFileNamed, type DataFileKind } from './files.ts';

export const MANIFEST_FILE = 'manifest.json';
export const MANIFEST_FORMAT = 1;

export interface ManifestFile {
  name: string;
  kind: DataFileKind;
  bytes: number;
  sha256: string;
  /** `PRAGMA user_version` of the copy (SQLite files only). */
  schema_version?: number;
  /** `PRAGMA integrity_check` of the copy: 'ok', or its first problems (SQLite files only). */
  integrity?: string;
}

export interface Manifest {
  format: number;
  /** When the copy began (ISO 8601, UTC). */
  created_at: string;
  gateway_version: string;
  /** 'gateway' (POST /admin/api/backup) or 'cli' (npm run backup). */
  taken_by: 'gateway' | 'cli';
  label?: string;
  files: ManifestFile[];
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export interface SqliteFacts {
  schemaVersion: number;
  integrity: string;
}

/** `user_version` and `integrity_check` of a SQLite file, read without changing it. */
export function sqliteFacts(path: string): SqliteFacts {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const schemaVersion = db.pragma('user_version', { simple: true }) as number;
    const rows = db.pragma('integrity_check(20)') as { integrity_check: string }[];
    return { schemaVersion, integrity: rows.map((r) => r.integrity_check).join('; ') };
  } finally {
    db.close();
  }
}

/** The facts of one file in a backup folder, for its manifest entry. */
export async function describeFile(dir: string, name: string, kind: DataFileKind): Promise<ManifestFile> {
  const path = join(dir, name);
  const entry: ManifestFile = { name, kind, bytes: statSync(path).size, sha256: await sha256File(path) };
  if (kind === 'sqlite') {
    const facts = sqliteFacts(path);
    entry.schema_version = facts.schemaVersion;
    entry.integrity = facts.integrity;
  }
  return entry;
}

/** A backup folder that cannot be restored: what is wrong, in one sentence. */
export class BackupInvalidError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupInvalidError';
  }
}

/** Reads and checks the shape of `<dir>/manifest.json`; only the gateway's own file names are accepted. */
export function readManifest(dir: string): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8'));
  } catch (err) {
    throw new BackupInvalidError(`no readable ${MANIFEST_FILE} in ${dir}: ${(err as Error).message}`);
  }
  const m = raw as Partial<Manifest>;
  if (!m || typeof m !== 'object' || m.format !== MANIFEST_FORMAT || !Array.isArray(m.files)) {
    throw new BackupInvalidError(`${MANIFEST_FILE} in ${dir} is not a backup manifest of format ${MANIFEST_FORMAT}`);
  }
  const seen = new Set<string>();
  for (const f of m.files as Partial<ManifestFile>[]) {
    const known = typeof f?.name === 'string' ? dataFileNamed(f.name) : undefined;
    if (!known || known.kind !== f.kind || seen.has(known.name)) {
      throw new BackupInvalidError(`${MANIFEST_FILE} names an unexpected file: ${JSON.stringify(f?.name)}`);
    }
    if (!Number.isInteger(f.bytes) || typeof f.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(f.sha256)) {
      throw new BackupInvalidError(`${MANIFEST_FILE} has no valid size and sha256 for ${known.name}`);
    }
    seen.add(known.name);
  }
  return m as Manifest;
}

/**
 * Checks every file of a backup folder against its manifest: size, sha256 and, for a database,
 * a fresh integrity check and the schema version. Throws `BackupInvalidError` on the first
 * mismatch; `newestKnown` (file name → the newest schema version this gateway knows) refuses a
 * database from a newer gateway.
 */
export async function verifyBackup(dir: string, newestKnown: Record<string, number> = {}): Promise<Manifest> {
  const manifest = readManifest(dir);
  for (const f of manifest.files) {
    const path = join(dir, f.name);
    let bytes: number;
    try {
      bytes = statSync(path).size;
    } catch {
      throw new BackupInvalidError(`${f.name} is missing from ${dir}`);
    }
    if (bytes !== f.bytes) throw new BackupInvalidError(`${f.name} is ${bytes} bytes, the manifest says ${f.bytes}`);
    if ((await sha256File(path)) !== f.sha256) {
      throw new BackupInvalidError(`${f.name} does not match the sha256 in the manifest`);
    }
    if (f.kind !== 'sqlite') continue;
    const facts = sqliteFacts(path);
    if (facts.integrity !== 'ok')
      throw new BackupInvalidError(`${f.name} fails its integrity check: ${facts.integrity}`);
    if (facts.schemaVersion !== f.schema_version) {
      throw new BackupInvalidError(
        `${f.name} has schema version ${facts.schemaVersion}, the manifest says ${f.schema_version}`,
      );
    }
    const newest = newestKnown[f.name];
    if (newest !== undefined && facts.schemaVersion > newest) {
      throw new BackupInvalidError(
        `${f.name} has schema version ${facts.schemaVersion}, newer than this gateway's ${newest}: ` +
          'restore it with a newer gateway',
      );
    }
  }
  return manifest;
}
