/**
 * Three-way merge of one table by primary key (pure): this instance's rows now (`local`), the
 * snapshot they were last in step with (`base`) and the cluster's newer one (`remote`). A row
 * this instance changed (added, edited, removed) since `base` keeps its change; every other row
 * is taken from `remote`. So two instances editing different rows at once both keep their edit,
 * and the same row edited on both ends with the last one pushed (last writer wins per row).
 *
 * Users have more than one unique column: an id given out on both ends at once goes to the
 * remote user and this instance's is given the next free id (its key keeps working); a name or
 * a key taken on both ends at once keeps the remote user and drops this instance's change,
 * reported in `dropped` (the caller logs it).
 */
import type { Row, SyncedTable, TableSnapshot } from '../store/table-snapshot.ts';
import { SYNCED_TABLES } from '../store/table-snapshot.ts';

/** Columns besides the primary key whose values must be unique. */
const UNIQUE: Partial<Record<SyncedTable, string[]>> = { users: ['name', 'key_digest'] };

export interface MergeResult {
  snapshot: TableSnapshot;
  /** Primary keys of local changes given up (a unique value taken on both ends). */
  dropped: string[];
  /** Local rows moved to another id: [old id, new id]. */
  renumbered: [number, number][];
}

/** A row's identity for comparisons: its values in column order. */
export function rowText(row: Row | undefined, columns: readonly string[]): string | undefined {
  return row === undefined ? undefined : JSON.stringify(columns.map((c) => row[c] ?? null));
}

/** Whether two snapshots hold the same rows (order aside). */
export function sameRows(
  a: readonly Row[],
  b: readonly Row[],
  table: SyncedTable,
  columns: readonly string[],
): boolean {
  if (a.length !== b.length) return false;
  const index = byKey(b, table);
  return a.every((row) => rowText(row, columns) === rowText(index.get(keyOf(row, table)), columns));
}

export function mergeTable(
  table: SyncedTable,
  columns: readonly string[],
  base: TableSnapshot,
  local: TableSnapshot,
  remote: TableSnapshot,
): MergeResult {
  const b = byKey(base.rows, table);
  const l = byKey(local.rows, table);
  const r = byKey(remote.rows, table);
  const text = (row: Row | undefined) => rowText(row, columns);
  const merged = new Map<string, Row>();
  const changed = new Set<string>();
  const moved: Row[] = [];
  for (const key of new Set([...b.keys(), ...l.keys(), ...r.keys()])) {
    const mine = l.get(key);
    if (text(mine) === text(b.get(key))) {
      const theirs = r.get(key);
      if (theirs) merged.set(key, theirs);
      continue;
    }
    const theirs = r.get(key);
    // added here while another instance added a different row under the same key
    if (table === 'users' && mine && !b.has(key) && theirs && text(theirs) !== text(mine)) {
      merged.set(key, theirs);
      moved.push(mine);
      continue;
    }
    if (mine) {
      merged.set(key, mine);
      changed.add(key);
    }
  }
  const renumbered: [number, number][] = [];
  if (moved.length > 0) {
    let next = Math.max(local.seq ?? 0, remote.seq ?? 0, ...[...merged.values()].map((row) => Number(row.id)));
    for (const row of moved) {
      const id = ++next;
      renumbered.push([Number(row.id), id]);
      merged.set(String(id), { ...row, id });
      changed.add(String(id));
    }
  }
  const dropped = giveUpClashes(table, merged, changed, r);
  const rows = [...merged.values()];
  const seq = Math.max(local.seq ?? 0, remote.seq ?? 0, ...rows.map((row) => Number(row.id) || 0));
  return { snapshot: table === 'users' ? { rows, seq } : { rows }, dropped, renumbered };
}

/** Local changes whose unique values clash with another row go back to the remote row (or away). */
function giveUpClashes(
  table: SyncedTable,
  merged: Map<string, Row>,
  changed: Set<string>,
  remote: Map<string, Row>,
): string[] {
  const columns = UNIQUE[table];
  if (!columns) return [];
  const dropped: string[] = [];
  for (let again = true; again;) {
    again = false;
    for (const column of columns) {
      const holder = new Map<unknown, string>();
      for (const [key, row] of merged) {
        const other = holder.get(row[column]);
        if (other === undefined) {
          holder.set(row[column], key);
          continue;
        }
        // remote rows agree with each other: one of the two is a local change
        const loser = changed.has(key) ? key : changed.has(other) ? other : undefined;
        if (loser === undefined) continue;
        const theirs = remote.get(loser);
        if (theirs) merged.set(loser, theirs);
        else merged.delete(loser);
        changed.delete(loser);
        dropped.push(loser);
        again = true;
        break;
      }
      if (again) break;
    }
  }
  return dropped;
}

function keyOf(row: Row, table: SyncedTable): string {
  return String(row[SYNCED_TABLES[table]]);
}

function byKey(rows: readonly Row[], table: SyncedTable): Map<string, Row> {
  return new Map(rows.map((row) => [keyOf(row, table), row]));
}
