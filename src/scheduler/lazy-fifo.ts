/** Anything that can leave a queue by being marked settled. */
export interface Settleable {
  readonly settled: boolean;
}

/** Anything with a place in arrival order: smaller `seq` = older. */
export interface Sequenced {
  readonly seq: number;
}

/**
 * A FIFO whose items leave by being marked settled (lazy deletion): settled items are skipped
 * when peeking and swept out in bulk, so removal costs O(1) amortised. The owner calls
 * `noteSettled()` once for each of its items that settles, which keeps `live` exact.
 *
 * Items are kept in `seq` order: `push` appends (callers push in arrival order), and the rare
 * late joiner goes in with `insertInOrder`.
 */
export class LazyFifo<T extends Settleable & Sequenced> {
  private items: T[] = [];
  private head = 0;
  /** Settled items at or after `head`. */
  private dead = 0;

  /** Items not yet settled. */
  get live(): number {
    return this.items.length - this.head - this.dead;
  }

  /** Appends an item younger than every queued one (the hot path). */
  push(item: T): void {
    this.items.push(item);
  }

  /**
   * Puts an item that joins late where its `seq` belongs, so the head stays the oldest.
   * Binary search over the queued items (settled ones included, which are in order too), then
   * a splice: O(n), for rare events only.
   */
  insertInOrder(item: T): void {
    let low = this.head;
    let high = this.items.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.items[mid].seq < item.seq) low = mid + 1;
      else high = mid;
    }
    if (low === this.items.length) this.items.push(item);
    else this.items.splice(low, 0, item);
  }

  /** The oldest unsettled item, if any. */
  peek(): T | undefined {
    while (this.head < this.items.length) {
      const item = this.items[this.head];
      if (!item.settled) return item;
      this.head++;
      this.dead--;
      if (this.head > 1024 && this.head * 2 > this.items.length) this.trimHead();
    }
    return undefined;
  }

  /** Records that one item of this queue settled; sweeps when mostly dead. */
  noteSettled(): void {
    this.dead++;
    const occupied = this.items.length - this.head;
    if (this.dead > 32 && this.dead * 2 > occupied) this.sweep();
  }

  /** Unsettled items, oldest first. */
  *values(): IterableIterator<T> {
    for (let i = this.head; i < this.items.length; i++) if (!this.items[i].settled) yield this.items[i];
  }

  private sweep(): void {
    const kept: T[] = [];
    for (let i = this.head; i < this.items.length; i++) if (!this.items[i].settled) kept.push(this.items[i]);
    this.items = kept;
    this.head = 0;
    this.dead = 0;
  }

  private trimHead(): void {
    this.items = this.items.slice(this.head);
    this.head = 0;
  }
}
