/**
 * Start-up only: flags/env, config, logger, listen, signals, graceful shutdown.
 *   npm start -- --config <file> --port <n> --host <addr>
 *   env LLM_GATEWAY_CONFIG, PORT, HOST do the same. Defaults: ./config.yaml, 4000, 127.0.0.1.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from './app.ts';
import { isLoopbackHost } from './auth/loopback.ts';
import { howToWriteConfigHint } from './config/defaults.ts';
import { loadBootConfig } from './config/load.ts';
import { formatProblems } from './config/schema.ts';
import { createLogger } from './logging.ts';

const SHUTDOWN_GRACE_MS = 30_000;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { config: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' } },
    allowPositionals: false,
  });
  const configPath = resolve(values.config ?? process.env.LLM_GATEWAY_CONFIG ?? 'config.yaml');
  const explicit = values.config !== undefined || process.env.LLM_GATEWAY_CONFIG !== undefined;
  const port = Number(values.port ?? process.env.PORT ?? 4000);
  const host = values.host ?? process.env.HOST ?? '127.0.0.1';
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`invalid port: ${values.port ?? process.env.PORT}`);

  const boot = loadBootConfig(configPath, process.env, { explicit });
  if (!boot.result.ok) fail(`invalid configuration in ${configPath}:\n${formatProblems(boot.result.problems)}`);
  const { config } = boot.result;
  const configSource = boot.source === 'file' ? configPath : 'embedded default';

  const logger = createLogger(config, { isTTY: process.stdout.isTTY === true });
  if (configSource === 'embedded default') {
    logger.warn(`no config file at ${configPath}: using the embedded default (probing loopback ports for Ollama, llama.cpp, vLLM, LM Studio, ComfyUI). ${howToWriteConfigHint}`);
  } else {
    logger.info(`using config ${configPath}`);
  }

  const { app, gateway } = await buildApp({ config, configSource, logger, watchConfigPath: configPath });
  await app.listen({ port, host });
  // open and reachable from the network: the model endpoints answer anyone who finds the port
  // (the admin API still answers loopback only): error level, so `log_level: error` shows it too
  if (gateway.authenticator.isOpen() && !isLoopbackHost(host)) {
    const bound = app.server.address();
    const actualPort = typeof bound === 'object' && bound ? bound.port : port;
    logger.error(`SECURITY: the gateway is OPEN and listening on ${host}, not loopback: anyone who can reach port ${actualPort} may use every backend (paid ones included). `
      + 'Set api_key in the config (e.g. api_key: ${GATEWAY_API_KEY}) or create an admin user from this host, or listen on 127.0.0.1 (--host / HOST).');
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info(`${signal}: no new connections; letting in-flight requests finish (up to ${SHUTDOWN_GRACE_MS / 1000} s)`);
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

function fail(message: string): never {
  process.stderr.write(`llm-gateway: ${message}\n`);
  process.exit(1);
}

main().catch((err) => {
  process.stderr.write(`llm-gateway: failed to start: ${err?.stack ?? err}\n`);
  process.exit(1);
});
