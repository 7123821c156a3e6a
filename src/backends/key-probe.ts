/**
 * A health probe of a pooled backend: sent with a key not muted, and when the upstream refuses
 * that key (401/403) the key is muted and the probe tries the next, so one revoked key of a pool
 * never marks the backend down while another key works. Without a pool: the probe as it was.
 */
import type { BackendSpec } from '../config/types.ts';
import { withKey } from './credentials.ts';
import { ProbeError } from './probe.ts';
import type { BackendRegistry, BackendState } from './registry.ts';

export async function probeWithKeys<T>(
  backend: BackendState,
  registry: Pick<BackendRegistry, 'keyRejected'>,
  now: () => number,
  run: (spec: BackendSpec) => Promise<T>,
): Promise<T> {
  const pool = backend.keys;
  if (!pool) return run(backend.spec);
  for (let turn = 1; ; turn++) {
    const key = pool.peek(now());
    try {
      return await run(withKey(backend.spec, key));
    } catch (err) {
      const status = err instanceof ProbeError ? err.status : undefined;
      if ((status !== 401 && status !== 403) || key === undefined) throw err;
      pool.refused(key, status, undefined, now());
      registry.keyRejected({ backend: backend.name, key_hint: pool.hintOf(key) ?? '', status });
      if (turn >= pool.size || !pool.usable(now())) throw err;
    }
  }
}
