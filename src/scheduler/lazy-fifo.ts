/** Anything that can leave a queue by being marked settled. */
export interface Settleable {
  readonly settled: boolean;
}

/**
 * A FIFO whose items leave by being marked settled (lazy deletion): settled items are skipped
 * when peeking and swept out in bulk, so removal costs O(1) amortised. The owner calls
 * `noteSettled()` once for each of its items that settles, which keeps `live` exact.
 */
export class LazyFifo<T extends Settleable> {
  private items: T[] = [];
  private head = 0;
  /** Settled items at or after `head`. */
  private dead = 0;

  /** Items not yet settled. */
  get live(): number {
    return this.items.length - this.head - this.dead;
  }

  push(item: T): void {
    this.items.push(item);
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
