/**
 * A cluster of gateway instances for tests: each in its own process (cluster-child.ts) so one
 * can be killed with SIGKILL, all sharing one redis-server and the same backends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { embeddedDefaultConfig } from '../../src/config/defaults.ts';
import type { GatewayConfig } from '../../src/config/types.ts';
import { backendSpec, shareClusterSecret, type BackendInput } from './gateway.ts';

export interface ClusterInstance {
  id: string;
  url: string;
  process: ChildProcess;
  /** SIGKILL: no goodbye to Redis. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export async function startInstance(
  id: string,
  redisUrl: string,
  backends: BackendInput[],
  overrides: Partial<GatewayConfig> = {},
): Promise<ClusterInstance> {
  const dir = mkdtempSync(join(tmpdir(), `gw-cluster-${id}-`));
  const config: GatewayConfig = {
    ...embeddedDefaultConfig(),
    store_dir: dir,
    jobs_dir: join(dir, 'jobs'),
    log_level: (process.env.LLM_GATEWAY_TEST_LOG as GatewayConfig['log_level'] | undefined) ?? 'fatal',
    ...overrides,
    cluster: { redis_url: redisUrl, instance_id: id, lease_ttl_s: 3, ...overrides.cluster },
    backends: backends.map(backendSpec),
  };
  shareClusterSecret(dir, redisUrl);
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'cluster-child.ts'), file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`instance ${id} did not start in 30 s`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`instance ${id} exited with ${code} before listening`)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return {
    id,
    url: `http://127.0.0.1:${port}`,
    process: child,
    kill: () => end('SIGKILL'),
    stop: async () => {
      await end('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
