/** Friendly names for client IPs (or IPv6 /64 prefixes), shown as the "source" of calls. */
import type { Db } from './db.ts';

/**
 * Reads are served from memory (every call's attribution looks here); the map is loaded once
 * and replaced as a whole.
 */
export class IpAliasesRepo {
  private readonly selectAll: () => Record<string, string>;
  private readonly replaceAll: (map: Record<string, string>) => void;
  private cached?: Readonly<Record<string, string>>;

  constructor(db: Db) {
    const select = db.prepare<[], { ip: string; alias: string }>('SELECT ip, alias FROM ip_aliases ORDER BY ip');
    const clear = db.prepare('DELETE FROM ip_aliases');
    const insert = db.prepare<[string, string]>('INSERT INTO ip_aliases (ip, alias) VALUES (?, ?)');
    this.selectAll = () => Object.fromEntries(select.all().map((row) => [row.ip, row.alias])) as Record<string, string>;
    this.replaceAll = db.transaction((map: Record<string, string>) => {
      clear.run();
      for (const [ip, alias] of Object.entries(map)) insert.run(ip, alias);
    });
  }

  /** Every alias keyed by IP (or `<prefix>::/64`). */
  all(): Record<string, string> {
    return { ...this.current() };
  }

  /** The live map, read-only and not copied: for the request path. */
  current(): Readonly<Record<string, string>> {
    this.cached ??= Object.freeze(this.selectAll());
    return this.cached;
  }

  /** Replaces the whole map in one transaction. */
  replace(map: Record<string, string>): void {
    this.replaceAll(map);
    this.cached = undefined;
  }
}
