/**
 * One Lua script, run by its SHA (`EVALSHA`), with the source sent only when Redis does not know
 * it yet (NOSCRIPT: a fresh or restarted Redis). ioredis's own `defineCommand` sends the whole
 * source on every call made through auto-pipelining (it tracks loaded scripts per socket, and a
 * pipeline is a new "socket" each time), which on the hot path cost more than the call itself.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export class LuaScript {
  readonly sha: string;

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /** Runs the script with `keys` (its KEYS) and `args` (its ARGV). */
  async run<T>(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    try {
      return (await redis.evalsha(this.sha, keys.length, ...keys, ...args)) as T;
    } catch (err) {
      if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
      return (await redis.eval(this.lua, keys.length, ...keys, ...args)) as T;
    }
  }
}
