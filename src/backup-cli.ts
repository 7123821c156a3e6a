/**
 * The command lines of `npm run backup -- <dir>` and `npm run restore -- <dir>` (pure): the
 * folder, and the config the gateway runs on (`--config`, else LLM_GATEWAY_CONFIG, else
 * ./config.yaml, as the server reads it), from which store_dir and jobs_dir come.
 */
import { parseArgs } from 'node:util';

export type DataCommandName = 'backup' | 'restore';

export type DataCommand =
  { kind: 'run'; dir: string; config?: string } | { kind: 'help' } | { kind: 'error'; message: string };

export function dataCommandUsage(name: DataCommandName): string {
  const what =
    name === 'backup'
      ? 'Writes a consistent copy of store.db, stats.db, jobs.db and secret.key, with manifest.json,\n' +
        'into <dir> (a new or empty folder). Safe while the gateway runs.'
      : 'Checks the backup in <dir> against its manifest.json (sha256, integrity, schema versions) and\n' +
        'puts its files into store_dir and jobs_dir. Refused while a gateway runs on that store_dir;\n' +
        'the files it replaces are moved to replaced-<time>/ beside them.';
  return `Usage: npm run ${name} -- [--config <file>] <dir>

${what}

Options:
  --config <file>   the gateway's config file (default ./config.yaml; env LLM_GATEWAY_CONFIG);
                    store_dir and jobs_dir are read from it
  -h, --help        print this help and exit`;
}

export function parseDataCommand(argv: readonly string[]): DataCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    return { kind: 'error', message: (err instanceof Error ? err.message : String(err)).split('\n')[0] };
  }
  if (parsed.values.help) return { kind: 'help' };
  const [dir, ...extra] = parsed.positionals;
  if (!dir) return { kind: 'error', message: 'name the backup folder: <dir>' };
  if (extra.length) return { kind: 'error', message: `one folder only; also given: ${extra.join(' ')}` };
  return { kind: 'run', dir, ...(parsed.values.config !== undefined ? { config: parsed.values.config } : {}) };
}
