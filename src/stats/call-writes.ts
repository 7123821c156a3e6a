/**
 * The writes of the call log, prepared once on a stats.db connection: a batch in one
 * transaction (rows, gzip'd bodies, quota counters) and pruning. Used by the writer thread,
 * and by the main thread when it writes directly (`flush()`, or when the writer is gone).
 */
import type { Db } from '../store/db.ts';
import { packBody, type PackedBody } from './bodies.ts';
import { CALL_COLUMNS, type CallBatch, type StoredCall } from './call-rows.ts';

/** What a prune removes: call rows older than `rowCutoff`, bodies older than `bodyCutoff` (unix ms). */
export interface PruneCutoffs {
  /** -Infinity keeps every row. */
  rowCutoff: number;
  /** Never earlier than `rowCutoff`; -Infinity keeps every body. */
  bodyCutoff: number;
  /** Quota counters of UTC days before this one go. */
  firstUsageDay: number;
}

export interface Pruned {
  rows: number;
  bodies: number;
}

export type CallWrites = ReturnType<typeof prepareCallWrites>;

export function prepareCallWrites(db: Db) {
  const insertCall = db.prepare(
    `INSERT INTO calls (${CALL_COLUMNS.join(', ')}) VALUES (${CALL_COLUMNS.map(() => '?').join(', ')})`,
  );
  const insertBodies = db.prepare(
    `INSERT INTO call_bodies (call_id, ts, request, response, request_bytes, response_bytes)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const addUsage = db.prepare(
    `INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (?, ?, ?, ?)
     ON CONFLICT (user_id, day) DO UPDATE SET
       requests = requests + excluded.requests, cost_usd = cost_usd + excluded.cost_usd`,
  );
  const deleteBodies = db.prepare('DELETE FROM call_bodies WHERE ts < ?');
  const deleteCalls = db.prepare('DELETE FROM calls WHERE ts < ?');
  const deleteBodiesChunk = db.prepare(
    'DELETE FROM call_bodies WHERE call_id IN (SELECT call_id FROM call_bodies WHERE ts < ? LIMIT ?)',
  );
  const deleteCallsChunk = db.prepare('DELETE FROM calls WHERE id IN (SELECT id FROM calls WHERE ts < ? LIMIT ?)');
  const deleteUsage = db.prepare('DELETE FROM quota_usage WHERE day < ?');

  const writeRows = db.transaction((calls: PackedCall[], batch: CallBatch, beforeCommit?: () => void) => {
    for (const c of calls) {
      // positional binding: markedly cheaper than named parameters on a hot batch
      const id = insertCall.run(CALL_COLUMNS.map((col) => c.row[col])).lastInsertRowid;
      if (c.request || c.response) {
        insertBodies.run(
          id, c.row.ts, c.request?.gz ?? null, c.response?.gz ?? null, c.request?.bytes ?? null, c.response?.bytes ?? null,
        );
      }
    }
    for (const u of batch.usage) addUsage.run(u.user_id, u.day, u.requests, u.cost);
    beforeCommit?.();
  });

  return {
    /**
     * Writes a batch in one transaction; bodies are capped and gzip'd before it opens.
     * `beforeCommit` runs inside the transaction, after the last statement.
     */
    writeBatch(batch: CallBatch, beforeCommit?: () => void): void {
      writeRows(packCalls(batch), batch, beforeCommit);
    },
    /** Prunes in one transaction (the main thread's synchronous `prune()`). */
    pruneAll: db.transaction((c: PruneCutoffs): Pruned => {
      const bodies = Number.isFinite(c.bodyCutoff) ? deleteBodies.run(c.bodyCutoff).changes : 0;
      const rows = Number.isFinite(c.rowCutoff) ? deleteCalls.run(c.rowCutoff).changes : 0;
      deleteUsage.run(c.firstUsageDay);
      return { rows, bodies };
    }),
    /**
     * One short prune transaction of at most `limit` bodies, then rows, then the quota
     * counters: repeat until it returns `done`, letting other writes in between.
     */
    pruneStep: db.transaction((c: PruneCutoffs, limit: number): Pruned & { done: boolean } => {
      if (Number.isFinite(c.bodyCutoff)) {
        const bodies = deleteBodiesChunk.run(c.bodyCutoff, limit).changes;
        if (bodies > 0) return { rows: 0, bodies, done: false };
      }
      if (Number.isFinite(c.rowCutoff)) {
        const rows = deleteCallsChunk.run(c.rowCutoff, limit).changes;
        if (rows > 0) return { rows, bodies: 0, done: false };
      }
      deleteUsage.run(c.firstUsageDay);
      return { rows: 0, bodies: 0, done: true };
    }),
  };
}

interface PackedCall {
  row: StoredCall;
  request: PackedBody | null;
  response: PackedBody | null;
}

function packCalls(batch: CallBatch): PackedCall[] {
  const calls: PackedCall[] = batch.calls.map((row) => ({ row, request: null, response: null }));
  for (const b of batch.bodies) {
    const call = calls[b.index];
    if (!call) continue;
    call.request = packBody(asBody(b.request));
    call.response = packBody(asBody(b.response));
  }
  return calls;
}

/** A body as `packBody` takes it (a body posted to a thread arrives as a plain Uint8Array). */
function asBody(body: Uint8Array | string | undefined): Buffer | string | undefined {
  if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) return body;
  return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}
