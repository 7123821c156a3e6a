/**
 * Runs one fake backend from test/fakes as its own process (for benchmarks and manual poking):
 *   tsx scripts/fake-backend.ts --kind vllm|anthropic|… [--port 0] [--models a,b] [--chunks 8] [--tps 0]
 * Prints one line `READY <url>` when listening; stops on SIGTERM/SIGINT.
 */
import { parseArgs } from 'node:util';
import { startAnthropicFake, startFake, FAKE_KINDS, type FakeKind } from '../test/fakes/index.ts';

const { values } = parseArgs({
  options: {
    kind: { type: 'string', default: 'vllm' },
    port: { type: 'string', default: '0' },
    models: { type: 'string' },
    chunks: { type: 'string', default: '8' },
    tps: { type: 'string', default: '0' },
  },
});
const kind = values.kind as FakeKind | 'anthropic';
if (kind !== 'anthropic' && !FAKE_KINDS.includes(kind)) throw new Error(`--kind must be one of ${FAKE_KINDS.join(', ')}, anthropic`);
const options = {
  port: Number(values.port),
  models: values.models?.split(','),
  knobs: { chunkCount: Number(values.chunks), tokensPerSecond: Number(values.tps) },
};
const fake = kind === 'anthropic' ? await startAnthropicFake(options) : await startFake(kind, options);
process.stdout.write(`READY ${fake.url}\n`);
const stop = () => void fake.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
