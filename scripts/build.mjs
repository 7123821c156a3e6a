// Bundles the gateway for production: dist/server.mjs, and dist/backup.mjs + dist/restore.mjs
// for `npm run backup` / `npm run restore` (esbuild, ~0.2 s; npm packages stay external).
// Running the bundle with plain node saves tsx's loader thread (~50 MB RSS).
//   node scripts/build.mjs        (npm start runs it before starting)
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
await build({
  entryPoints: {
    server: join(root, 'src/server.ts'),
    backup: join(root, 'scripts/backup.ts'),
    restore: join(root, 'scripts/restore.ts'),
  },
  outdir: join(root, 'dist'),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
