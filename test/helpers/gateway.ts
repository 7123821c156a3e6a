/**
 * Starts a real gateway on 127.0.0.1 port 0 with a temporary store, wired to the given
 * backends, and waits until discovery has spoken for each of them.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildApp, type App } from '../../src/app.ts';
import { embeddedDefaultConfig } from '../../src/config/defaults.ts';
import type { BackendSpec, GatewayConfig } from '../../src/config/types.ts';

export interface TestGateway extends App {
  url: string;
  port: number;
  storeDir: string;
  close(): Promise<void>;
}

export type BackendInput = Partial<BackendSpec> & { name: string; url: string };

export function backendSpec(b: BackendInput): BackendSpec {
  return { type: 'openai', enabled: true, paid: false, local: false, chat_only: false, serverless_only: false, ...b };
}

export async function startGateway(
  backends: BackendInput[],
  overrides: Partial<GatewayConfig> = {},
  opts: {
    logStream?: NodeJS.WritableStream;
    storeDir?: string;
    /** Listen address (default 127.0.0.1); `url` stays on 127.0.0.1 for a wildcard one. */
    host?: string;
    /** Where the file config came from ('embedded default' = no config file). */
    configSource?: string;
  } = {},
): Promise<TestGateway> {
  const storeDir = opts.storeDir ?? mkdtempSync(join(tmpdir(), 'llmgw-test-'));
  const config: GatewayConfig = {
    ...embeddedDefaultConfig(),
    store_dir: storeDir,
    jobs_dir: join(storeDir, 'jobs'),
    // quiet by default so test output stays readable; LLM_GATEWAY_TEST_LOG=warn (or debug) shows it
    log_level: (process.env.LLM_GATEWAY_TEST_LOG as GatewayConfig['log_level'] | undefined) ?? 'fatal',
    ...overrides,
    backends: backends.map(backendSpec),
  };
  if (config.cluster) shareClusterSecret(storeDir, config.cluster.redis_url);
  const logger = pino({ level: config.log_level }, opts.logStream ?? pino.destination({ dest: 2, sync: false }));
  const built = await buildApp({ config, configSource: opts.configSource ?? 'test', logger, processMetrics: false });
  const host = opts.host ?? '127.0.0.1';
  await built.app.listen({ port: 0, host });
  await built.gateway.discovery.pollAll();
  const address = built.app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    ...built,
    url: `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    storeDir,
    close: async () => {
      await built.app.close();
      if (!opts.storeDir) rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/**
 * The instances of one cluster share `secret.key` (the store's snapshots travel sealed with it):
 * a test instance without one gets the cluster's, derived from its Redis URL.
 */
export function shareClusterSecret(storeDir: string, redisUrl: string): void {
  const file = join(storeDir, 'secret.key');
  if (existsSync(file)) return;
  writeFileSync(file, createHash('sha256').update(`test cluster ${redisUrl}`).digest(), { mode: 0o600 });
}
