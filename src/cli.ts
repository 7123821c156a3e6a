/**
 * The command line of `llm-gateway` (pure): flags in, what to do out. A mistake is one line
 * for the user (exit 2), never a stack trace.
 */
import { parseArgs } from 'node:util';

export interface RunOptions {
  config?: string;
  port?: string;
  host?: string;
}

export type Command =
  { kind: 'run'; options: RunOptions } | { kind: 'help' } | { kind: 'version' } | { kind: 'error'; message: string };

export const USAGE = `Usage: llm-gateway [options]

Options:
  --config <file>   config file (default ./config.yaml; env LLM_GATEWAY_CONFIG).
                    Without one, the gateway runs on built-in defaults.
  --port <n>        port to listen on (default 4000; env PORT)
  --host <addr>     address to listen on (default 127.0.0.1; env HOST)
  -h, --help        print this help and exit
  -v, --version     print the version and exit

Once running: the console is at http://<host>:<port>/ui, the API at http://<host>:<port>/v1.`;

export function parseCommandLine(argv: readonly string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        config: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      allowPositionals: false,
      strict: true,
    });
  } catch (err) {
    return { kind: 'error', message: oneLine(err) };
  }
  const { help, version, ...options } = parsed.values;
  if (help) return { kind: 'help' };
  if (version) return { kind: 'version' };
  return { kind: 'run', options };
}

/** node:util's parse errors, without the hint that names its own API. */
function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0].replace(/\. To specify .*$/, '');
}
