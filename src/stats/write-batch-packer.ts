/**
 * Turns queued call records into the message that asks the writer thread to store them, a
 * slice of rows at a time: packing costs this thread about half a microsecond a row, so a
 * batch of thousands is packed over several event-loop turns instead of in one pause.
 */
import { BodyPacker, bodyTransfers, CallPacker, packedTransfers } from './call-codec.ts';
import { QuotaUsageTally, storedCall } from './call-rows.ts';
import type { CallRecord } from './record.ts';
import type { WriterOp } from './writer-protocol.ts';

export class WriteBatchPacker {
  private readonly records: readonly CallRecord[];
  private readonly captureBodies: boolean;
  private readonly calls: CallPacker;
  private readonly bodies = new BodyPacker();
  private readonly usage = new QuotaUsageTally();
  private next = 0;
  /** Rows packed so far (records marked `usage_only` only add to the quota counters). */
  private rows = 0;

  constructor(records: readonly CallRecord[], captureBodies: boolean) {
    this.records = records;
    this.captureBodies = captureBodies;
    this.calls = new CallPacker(records.length);
  }

  /**
   * Packs up to `rows` more records, fewer once their bodies reach `bodyBytes` (each body
   * is copied once); true once every record is packed.
   */
  pack(rows: number, bodyBytes = Infinity): boolean {
    const end = Math.min(this.records.length, this.next + rows);
    for (; this.next < end && this.bodies.pendingBytes < bodyBytes; this.next++) {
      const rec = this.records[this.next];
      this.usage.add(rec);
      if (rec.usage_only) continue;
      this.calls.add(storedCall(rec));
      if (this.captureBodies) {
        this.bodies.add(this.rows, 'request', rec.request_body);
        this.bodies.add(this.rows, 'response', rec.response_body);
      }
      this.rows++;
    }
    this.bodies.endSlice();
    return this.next >= this.records.length;
  }

  /** The write op of the packed records, and the buffers to transfer with it. */
  op(seq: number): { op: WriterOp; transfer: ArrayBuffer[] } {
    const calls = this.calls.finish();
    const bodies = this.bodies.finish();
    return {
      op: { kind: 'write', seq, calls, bodies, usage: this.usage.list() },
      transfer: [...packedTransfers(calls), ...bodyTransfers(bodies)],
    };
  }
}
