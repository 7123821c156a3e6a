/**
 * The request ids recorded last, at most `capacity` of them (a ring, with a set to look them
 * up): O(1) a record, bounded memory. The call log asks it whether an id is on record already.
 */
export class RecentIds {
  private readonly ring: (string | undefined)[];
  private readonly seen = new Set<string>();
  private at = 0;

  constructor(readonly capacity: number) {
    this.ring = new Array<string | undefined>(Math.max(1, Math.floor(capacity))).fill(undefined);
  }

  /** Whether `id` is among the last `capacity` remembered. */
  has(id: string): boolean {
    return this.seen.has(id);
  }

  /** Remembers `id` (forgetting the oldest past `capacity`); false when it is remembered already. */
  add(id: string): boolean {
    if (this.seen.has(id)) return false;
    const oldest = this.ring[this.at];
    if (oldest !== undefined) this.seen.delete(oldest);
    this.ring[this.at] = id;
    this.at = (this.at + 1) % this.ring.length;
    this.seen.add(id);
    return true;
  }
}
