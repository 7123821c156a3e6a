// npm run restore -- [--config <file>] <dir>: checks the backup in <dir> and puts it into
// store_dir and jobs_dir; refused while a gateway holds store_dir (src/backup-commands.ts).
import { runDataCommand } from '../src/backup-commands.ts';

const io = { env: process.env, out: (l: string) => console.log(l), err: (l: string) => console.error(l) };
process.exitCode = await runDataCommand('restore', process.argv.slice(2), io);
