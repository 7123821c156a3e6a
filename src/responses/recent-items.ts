/**
 * The output items of recent Responses, kept in memory whatever `store` said, so that an
 * `item_reference` to them resolves: the Vercel AI SDK sends step 2 of a tool loop with the
 * assistant's text as `{type:"item_reference", id:"msg_…"}` (its own `store` option defaults to
 * true, though it never sends `store`). Owner-scoped like stored responses, bounded in count
 * and age; the oldest go first.
 */
export class RecentItems {
  private readonly items = new Map<string, { owner: string; item: unknown; at: number }>();

  constructor(private readonly opts: { maxItems: number; maxAgeMs: number; now: () => number }) {}

  /** Keeps every output item of `response` that has an id. */
  remember(owner: string, response: Record<string, unknown> | undefined): void {
    const output = response?.output;
    if (!Array.isArray(output)) return;
    const at = this.opts.now();
    for (const item of output) {
      const id = (item as { id?: unknown })?.id;
      if (typeof id !== 'string') continue;
      this.items.delete(id); // re-inserted last: Map order is age order
      this.items.set(id, { owner, item, at });
    }
    while (this.items.size > this.opts.maxItems) this.items.delete(this.items.keys().next().value as string);
  }

  /** The item, for its owner, while it is fresh. */
  get(owner: string, id: string): unknown {
    const kept = this.items.get(id);
    if (!kept || kept.owner !== owner) return undefined;
    if (this.opts.now() - kept.at > this.opts.maxAgeMs) {
      this.items.delete(id);
      return undefined;
    }
    return kept.item;
  }
}
