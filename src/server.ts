/**
 * Start-up only: flags/env, config, logger, listen, signals, graceful shutdown.
 *   npm start -- --config <file> --port <n> --host <addr>   (--help lists them, --version)
 *   env LLM_GATEWAY_CONFIG, PORT, HOST do the same. Defaults: ./config.yaml, 4000, 127.0.0.1.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildApp } from './app.ts';
import { ClusterUnreachableError } from './cluster/redis.ts';
import { isLoopbackHost } from './auth/loopback.ts';
import { parseCommandLine, USAGE, type RunOptions } from './cli.ts';
import { loadBootConfig, noConfigFileMessage } from './config/load.ts';
import { formatProblems } from './config/schema.ts';
import { createLogger } from './logging.ts';
import { fleetLines, whereLine } from './startup-report.ts';

const SHUTDOWN_GRACE_MS = 30_000;

async function main(): Promise<void> {
  const command = parseCommandLine(process.argv.slice(2));
  if (command.kind === 'help') return void process.stdout.write(`${USAGE}\n`);
  if (command.kind === 'version') return void process.stdout.write(`llm-gateway ${version()}\n`);
  if (command.kind === 'error') {
    process.stderr.write(`llm-gateway: ${command.message} (see --help)\n`);
    process.exit(2);
  }
  await run(command.options);
}

async function run(values: RunOptions): Promise<void> {
  const configPath = resolve(values.config ?? process.env.LLM_GATEWAY_CONFIG ?? 'config.yaml');
  const explicit = values.config !== undefined || process.env.LLM_GATEWAY_CONFIG !== undefined;
  const port = Number(values.port ?? process.env.PORT ?? 4000);
  const host = values.host ?? process.env.HOST ?? '127.0.0.1';
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`invalid port: ${values.port ?? process.env.PORT}`);

  const boot = loadBootConfig(configPath, process.env, { explicit });
  if (!boot.result.ok) fail(`invalid configuration in ${configPath}:\n${formatProblems(boot.result.problems)}`);
  const { config } = boot.result;
  const configSource = boot.source === 'file' ? configPath : 'embedded default';

  const isTTY = process.stdout.isTTY === true;
  const logger = createLogger(config, { isTTY });
  if (configSource === 'embedded default') {
    logger.warn(noConfigFileMessage(configPath));
  } else {
    logger.info(`using config ${configPath}`);
  }

  const { app, gateway } = await buildApp({ config, configSource, logger, watchConfigPath: configPath });
  await app.listen({ port, host });
  const bound = app.server.address();
  const actualPort = typeof bound === 'object' && bound ? bound.port : port;
  logger.info(whereLine(host, actualPort));
  // on a terminal, which backends answered (the first round is already running: this joins it)
  if (isTTY) {
    void gateway.discovery.pollAll().then(() => {
      for (const line of fleetLines(gateway.health)) logger.info(line);
    });
  }
  // open and reachable from the network: the model endpoints answer anyone who finds the port
  // (the admin API still answers loopback only): error level, so `log_level: error` shows it too
  if (gateway.authenticator.isOpen() && !isLoopbackHost(host)) {
    logger.error(
      `SECURITY: the gateway is OPEN and listening on ${host}, not loopback: anyone who can ` +
        `reach port ${actualPort} may use every backend (paid ones included). ` +
        'Set api_key in the config (e.g. api_key: ${GATEWAY_API_KEY}) or create an admin user ' +
        'from this host, or listen on 127.0.0.1 (--host / HOST).',
    );
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info(
      `${signal}: no new connections; letting in-flight requests finish (up to ${SHUTDOWN_GRACE_MS / 1000} s)`,
    );
    const force = setTimeout(() => {
      logger.warn('grace period over; closing remaining connections');
      app.server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    await app.close();
    clearTimeout(force);
    logger.info('stopped cleanly');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** package.json's version, read beside the bundle (dist/) or the source (src/). */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

function fail(message: string): never {
  process.stderr.write(`llm-gateway: ${message}\n`);
  process.exit(1);
}

main().catch((err) => {
  if (err instanceof ClusterUnreachableError) fail(err.message);
  process.stderr.write(`llm-gateway: failed to start: ${err?.stack ?? err}\n`);
  process.exit(1);
});
