import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { STORE_DB } from './backup/files.ts';
import { STORE_MIGRATIONS, type Migration } from './migrations.ts';
import { ensurePrivateDir, ensurePrivateFile, tightenSqliteCompanions } from './private-files.ts';

export type Db = Database.Database;

/**
 * Opens (creating if needed) a SQLite file in WAL mode and brings its schema up to date.
 * `file` may be ':memory:' for tests. A file and its folder are private (0600, 0700): the
 * call log holds prompts, the store secrets' ciphertexts and digests.
 */
export function openDatabase(file: string, migrations: readonly Migration[]): Db {
  const onDisk = file !== ':memory:' && file !== '';
  if (onDisk) {
    ensurePrivateDir(dirname(file));
    ensurePrivateFile(file);
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db, migrations);
  // left readable by an older version (new ones take the database file's 0600 from SQLite)
  if (onDisk) tightenSqliteCompanions(file);
  return db;
}

/** store.db under `storeDir` (created on first start). */
export function openStore(storeDir: string): Db {
  return openDatabase(join(storeDir, STORE_DB), STORE_MIGRATIONS);
}

export function migrate(db: Db, migrations: readonly Migration[]): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}
