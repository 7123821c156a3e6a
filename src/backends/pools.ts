import { Pool, type Dispatcher } from 'undici';

export interface PoolOptions {
  connectTimeoutMs: number;
}

/**
 * One keep-alive undici pool per backend origin. A backend whose URL changes or that is
 * removed gets its pool closed gracefully: in-flight requests finish, new ones use the new pool.
 */
export class UpstreamPools {
  private readonly pools = new Map<string, { url: string; origin: string; pool: Pool }>();

  constructor(private readonly opts: PoolOptions = { connectTimeoutMs: 10_000 }) {}

  /** The dispatcher for `name` whose base URL is `url`. */
  get(name: string, url: string): Dispatcher {
    const entry = this.pools.get(name);
    if (entry?.url === url) return entry.pool;
    const origin = new URL(url).origin;
    if (entry && entry.origin === origin) {
      entry.url = url;
      return entry.pool;
    }
    if (entry) void entry.pool.close().catch(() => {});
    const pool = new Pool(origin, {
      connections: null,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      connectTimeout: this.opts.connectTimeoutMs,
      // the gateway applies its own head/idle timeouts per request
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    this.pools.set(name, { url, origin, pool });
    return pool;
  }

  /** Closes the pool of a removed backend after its in-flight requests finish. */
  retire(name: string): void {
    const entry = this.pools.get(name);
    if (!entry) return;
    this.pools.delete(name);
    void entry.pool.close().catch(() => {});
  }

  async closeAll(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((e) => e.pool.destroy().catch(() => {})));
  }
}

/** Path prefix of a backend URL (e.g. '/api' for https://openrouter.ai/api), without trailing slash. */
export function basePath(url: string): string {
  const p = new URL(url).pathname;
  return p.endsWith('/') ? p.slice(0, -1) : p;
}
