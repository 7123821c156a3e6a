// npm run backup -- [--config <file>] <dir>: a consistent copy of the gateway's databases and
// secret.key into <dir>, with manifest.json; safe while the gateway runs (src/backup-commands.ts).
import { runDataCommand } from '../src/backup-commands.ts';

const io = { env: process.env, out: (l: string) => console.log(l), err: (l: string) => console.error(l) };
process.exitCode = await runDataCommand('backup', process.argv.slice(2), io);
