/**
 * The call log's writer thread (a `worker_threads` entry module; see writer-thread.ts).
 *
 * It owns a second connection to stats.db and writes what the main thread posts: each
 * batch of calls in one transaction (bodies capped and gzip'd here, off the main thread)
 * and the hourly prune in short transactions, so a batch is never stuck behind a long
 * prune. Ops run in the order they arrive; each is settled in shared memory (for a main
 * thread blocked in `flush()`) and answered with a message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../store/db.ts';
import { unpackBodies, unpackCalls } from './call-codec.ts';
import { prepareCallWrites, type CallWrites, type PruneCutoffs } from './call-writes.ts';
import { STATS_MIGRATIONS } from './migrations.ts';
import { WriterSignals, type WriterData, type WriterMessage, type WriterOp } from './writer-protocol.ts';

/** Rows deleted per prune transaction. */
const PRUNE_STEP_ROWS = 5_000;
/** The WAL is checkpointed after a write at most this often (WAL size stays ~ one interval of writes). */
const CHECKPOINT_INTERVAL_MS = 1_000;

if (parentPort) runWriter(parentPort, workerData as WriterData);

function runWriter(port: NonNullable<typeof parentPort>, data: WriterData): void {
  const signals = new WriterSignals(data.signals);
  // the file exists and is migrated (the main thread did it); this only applies the pragmas
  const db = openDatabase(data.file, STATS_MIGRATIONS);
  // checkpoints run between ops, not inside a COMMIT where the main thread may wait on it
  db.pragma('wal_autocheckpoint = 0');
  const writes = prepareCallWrites(db);
  let lastCheckpoint = performance.now();

  const answer = (op: WriterOp, error?: unknown) => {
    signals.settle(op.seq, error === undefined);
    const result: WriterMessage = { kind: op.kind, seq: op.seq, ok: error === undefined };
    if (error !== undefined) result.error = error instanceof Error ? error.message : String(error);
    port.postMessage(result);
  };

  port.on('message', (op: WriterOp) => {
    if (op.kind === 'prune') {
      void prune(writes, op).then(() => answer(op), (err: unknown) => answer(op, err ?? 'prune failed'));
      return;
    }
    try {
      writes.writeBatch(
        { calls: unpackCalls(op.calls), bodies: unpackBodies(op.bodies), usage: op.usage },
        () => signals.beginCommit(),
      );
    } catch (err) {
      answer(op, err ?? 'write failed');
      return;
    }
    answer(op);
    if (performance.now() - lastCheckpoint >= CHECKPOINT_INTERVAL_MS) {
      checkpoint(db);
      lastCheckpoint = performance.now();
    }
  });
  signals.markReady();
  port.postMessage({ kind: 'ready' } satisfies WriterMessage);
}

/** Prunes in short transactions, yielding to queued writes between them. */
async function prune(writes: CallWrites, cutoffs: PruneCutoffs): Promise<void> {
  for (;;) {
    if (writes.pruneStep(cutoffs, PRUNE_STEP_ROWS).done) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A passive checkpoint: never waits for readers; one that cannot finish is retried later. */
function checkpoint(db: ReturnType<typeof openDatabase>): void {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // a busy checkpoint is harmless; the next one catches up
  }
}
