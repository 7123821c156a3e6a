/**
 * One gateway instance in its own process, for the cluster tests that kill one with SIGKILL:
 * `node --import tsx test/helpers/cluster-child.ts <config.json>` builds the app from the JSON
 * config, listens on 127.0.0.1 port 0 and prints `LISTENING <port>`; SIGTERM closes it.
 */
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { buildApp } from '../../src/app.ts';
import type { GatewayConfig } from '../../src/config/types.ts';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8')) as GatewayConfig;
const logger = pino({ level: config.log_level });
const { app, gateway } = await buildApp({ config, configSource: 'test', logger, processMetrics: false });
await app.listen({ port: 0, host: '127.0.0.1' });
await gateway.discovery.pollAll();
const address = app.server.address();
process.stdout.write(`LISTENING ${typeof address === 'object' && address ? address.port : 0}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
