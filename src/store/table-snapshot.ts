/**
 * Whole-table snapshots of the console-edited tables (users, backends, settings, IP aliases),
 * their rows exactly as stored: key digests and ciphertexts stay what they are. Cluster mode
 * (cluster/store-sync.ts) carries them between instances; here is only the SQL: read a table,
 * replace a table's rows in one transaction.
 */
import type { Db } from './db.ts';

export type SyncedTable = 'users' | 'backends' | 'settings' | 'ip_aliases';

/** Each synced table and its primary key column. */
export const SYNCED_TABLES: Readonly<Record<SyncedTable, string>> = Object.freeze({
  users: 'id',
  backends: 'name',
  settings: 'key',
  ip_aliases: 'ip',
});

export type Row = Record<string, string | number | null>;

export interface TableSnapshot {
  rows: Row[];
  /** AUTOINCREMENT's high-water mark (users): an id once given out is not given out again. */
  seq?: number;
}

export class TableSnapshots {
  private readonly columns = new Map<SyncedTable, string[]>();

  constructor(private readonly db: Db) {
    for (const table of Object.keys(SYNCED_TABLES) as SyncedTable[]) {
      const info = db.pragma(`table_info(${table})`) as { name: string }[];
      this.columns.set(
        table,
        info.map((c) => c.name),
      );
    }
  }

  /** The table's columns, in schema order. */
  columnsOf(table: SyncedTable): readonly string[] {
    return this.columns.get(table)!;
  }

  read(table: SyncedTable): TableSnapshot {
    const rows = this.db.prepare(`SELECT * FROM ${table} ORDER BY ${SYNCED_TABLES[table]}`).all() as Row[];
    if (table !== 'users') return { rows };
    return { rows, seq: this.seq(table) };
  }

  /** Replaces every row of `table` in one transaction (a constraint failure changes nothing and throws). */
  replace(table: SyncedTable, snapshot: TableSnapshot): void {
    const columns = this.columnsOf(table);
    this.db.transaction(() => {
      this.db.prepare(`DELETE FROM ${table}`).run();
      for (const row of snapshot.rows) {
        const present = columns.filter((c) => row[c] !== undefined);
        const marks = present.map(() => '?').join(', ');
        this.db
          .prepare(`INSERT INTO ${table} (${present.join(', ')}) VALUES (${marks})`)
          .run(...present.map((c) => row[c]));
      }
      if (snapshot.seq !== undefined && snapshot.seq > this.seq(table)) {
        const updated = this.db.prepare('UPDATE sqlite_sequence SET seq = ? WHERE name = ?').run(snapshot.seq, table);
        if (updated.changes === 0)
          this.db.prepare('INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)').run(table, snapshot.seq);
      }
    })();
  }

  private seq(table: SyncedTable): number {
    const row = this.db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').get(table) as
      { seq: number } | undefined;
    return row?.seq ?? 0;
  }
}
