/**
 * Stored call rows packed for `postMessage`. Structured-cloning thousands of row objects
 * costs the posting thread milliseconds; packed, the numbers travel in a transferred
 * Float64Array and the strings as one string plus their lengths. Pure.
 */
import type { CapturedBody, StoredCall } from './call-rows.ts';

export interface PackedCalls {
  count: number;
  /** 14 numbers per row, in `packCalls`' order; NaN stands for null (a stored number is never NaN). */
  numbers: Float64Array;
  /** 8 string lengths per row, in `packCalls`' order; -1 stands for null... */
  stringLengths: Int32Array;
  /** ...and the strings, concatenated. */
  strings: string;
}

const NUMBERS_PER_ROW = 14;
const STRINGS_PER_ROW = 8;

/** Packs rows one at a time (so a big batch can be packed over several event-loop turns). */
export class CallPacker {
  private readonly numbers: Float64Array;
  private readonly stringLengths: Int32Array;
  private readonly strings: string[] = [];
  private n = 0;
  private s = 0;
  private count = 0;

  /** `capacity`: the number of rows that will be added. */
  constructor(capacity: number) {
    this.numbers = new Float64Array(capacity * NUMBERS_PER_ROW);
    this.stringLengths = new Int32Array(capacity * STRINGS_PER_ROW);
  }

  add(r: StoredCall): void {
    // one explicit line per column: monomorphic property reads, several times faster than a loop over names
    this.num(r.ts);
    this.num(r.duration_ms);
    this.num(r.ttft_ms);
    this.num(r.user_id);
    this.num(r.status);
    this.num(r.prompt_tokens);
    this.num(r.completion_tokens);
    this.num(r.cached_tokens);
    this.num(r.cache_write_tokens);
    this.num(r.cost_usd);
    this.num(r.upstream_cost_usd);
    this.num(r.usage_estimated);
    this.num(r.paid);
    this.num(r.count);
    this.str(r.request_id);
    this.str(r.endpoint);
    this.str(r.source);
    this.str(r.requested_model);
    this.str(r.model);
    this.str(r.backend);
    this.str(r.reason);
    this.str(r.reasoning);
    this.count++;
  }

  /** The rows added so far (call once; post it with `packedTransfers`). */
  finish(): PackedCalls {
    return {
      count: this.count,
      numbers: this.numbers.subarray(0, this.n),
      stringLengths: this.stringLengths.subarray(0, this.s),
      strings: this.strings.join(''),
    };
  }

  private num(v: number | null): void {
    this.numbers[this.n++] = v ?? Number.NaN;
  }

  private str(v: string | null): void {
    if (v === null) this.stringLengths[this.s++] = -1;
    else {
      this.stringLengths[this.s++] = v.length;
      this.strings.push(v);
    }
  }
}

/** Packs rows; post the result with `packedTransfers(p)` as the transfer list. */
export function packCalls(rows: readonly StoredCall[]): PackedCalls {
  const packer = new CallPacker(rows.length);
  for (const row of rows) packer.add(row);
  return packer.finish();
}

/** The buffers to transfer (not copy) when posting `p`. */
export function packedTransfers(p: PackedCalls): ArrayBuffer[] {
  return [p.numbers.buffer as ArrayBuffer, p.stringLengths.buffer as ArrayBuffer];
}

/** The rows `packCalls` packed. */
export function unpackCalls(p: PackedCalls): StoredCall[] {
  const rows: StoredCall[] = [];
  let n = 0;
  let s = 0;
  let at = 0;
  const num = () => {
    const v = p.numbers[n++];
    return Number.isNaN(v) ? null : v;
  };
  const str = () => {
    const length = p.stringLengths[s++];
    if (length < 0) return null;
    at += length;
    return p.strings.slice(at - length, at);
  };
  for (let i = 0; i < p.count; i++) {
    // same order as packCalls
    const ts = num()!;
    const duration_ms = num()!;
    const ttft_ms = num();
    const user_id = num();
    const status = num()!;
    const prompt_tokens = num()!;
    const completion_tokens = num()!;
    const cached_tokens = num()!;
    const cache_write_tokens = num()!;
    const cost_usd = num()!;
    const upstream_cost_usd = num();
    const usage_estimated = num() === 1 ? 1 : 0;
    const paid = num() === 0 ? 0 : 1;
    const count = num()!;
    const request_id = str()!;
    const endpoint = str()!;
    const source = str()!;
    const requested_model = str();
    const model = str();
    const backend = str()!;
    const reason = str();
    const reasoning = str();
    rows.push({
      ts, request_id, duration_ms, ttft_ms, endpoint, source, user_id, requested_model, model, backend, status, reason,
      prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens, reasoning, cost_usd, upstream_cost_usd,
      usage_estimated, paid, count,
    });
  }
  return rows;
}

/**
 * The captured bodies of a batch, packed as bytes into one transferred buffer per pack slice,
 * with a directory. Posting thousands of separate bodies would copy each (a small Buffer is a
 * view into an 8 KiB pool, which posting it copies whole) in the one turn that posts; this
 * copies each body once, in the slice that packs it. Text bodies are stored as UTF-8, as
 * `packBody` would store them.
 */
export interface PackedBodies {
  /** Per body, in order: row index, side (0 request, 1 response), byte length. */
  directory: Int32Array;
  /** The bodies in directory order, one buffer per slice (a body never spans two). */
  bytes: Uint8Array[];
}

const BODY_FIELDS = 3;

/** Packs captured bodies slice by slice: `add` any number, `endSlice`, and so on; then `finish`. */
export class BodyPacker {
  private readonly directory: number[] = [];
  private readonly bytes: Uint8Array[] = [];
  private slice: (string | Uint8Array)[] = [];
  private sliceLength = 0;

  /** A body of the row at `index` (a string or bytes; anything else is ignored). */
  add(index: number, side: 'request' | 'response', body: unknown): void {
    let length: number;
    if (typeof body === 'string') length = Buffer.byteLength(body, 'utf8');
    else if (body instanceof Uint8Array) length = body.byteLength;
    else return;
    this.directory.push(index, side === 'request' ? 0 : 1, length);
    this.slice.push(body);
    this.sliceLength += length;
  }

  /** Bytes of the bodies added since the last `endSlice`. */
  get pendingBytes(): number {
    return this.sliceLength;
  }

  /** Copies the slice's bodies into its buffer. */
  endSlice(): void {
    if (this.slice.length === 0) return;
    const chunk = Buffer.allocUnsafeSlow(this.sliceLength); // its own memory, not the pool: it is transferred
    let at = 0;
    for (const body of this.slice) {
      if (typeof body === 'string') at += chunk.write(body, at, 'utf8');
      else {
        chunk.set(body, at);
        at += body.byteLength;
      }
    }
    this.bytes.push(chunk);
    this.slice = [];
    this.sliceLength = 0;
  }

  /** All the bodies added (ends the slice under way). */
  finish(): PackedBodies {
    this.endSlice();
    return { directory: Int32Array.from(this.directory), bytes: this.bytes };
  }
}

/** The buffers to transfer (not copy) when posting `p`. */
export function bodyTransfers(p: PackedBodies): ArrayBuffer[] {
  return [p.directory.buffer as ArrayBuffer, ...p.bytes.map((b) => b.buffer as ArrayBuffer)];
}

/** The bodies `BodyPacker` packed, per row, as Buffers over the received memory. */
export function unpackBodies(p: PackedBodies): CapturedBody[] {
  const byRow = new Map<number, CapturedBody>();
  let chunk = 0;
  let at = 0;
  for (let i = 0; i < p.directory.length; i += BODY_FIELDS) {
    const [index, side, length] = [p.directory[i], p.directory[i + 1], p.directory[i + 2]];
    while (at + length > p.bytes[chunk].byteLength) [chunk, at] = [chunk + 1, 0]; // the next slice's buffer
    const bytes = p.bytes[chunk];
    const body = Buffer.from(bytes.buffer, bytes.byteOffset + at, length);
    at += length;
    let entry = byRow.get(index);
    if (!entry) byRow.set(index, (entry = { index }));
    if (side === 0) entry.request = body;
    else entry.response = body;
  }
  return [...byRow.values()];
}
