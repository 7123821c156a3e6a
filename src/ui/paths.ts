/**
 * Where the console's templates (`views/`) and assets (`public/`) live: beside package.json,
 * found by walking up from this module (it runs from src/ under tsx and from dist/ bundled).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'views'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the folder holding package.json and views/');
    dir = parent;
  }
}

export const ROOT_DIR = projectRoot();
export const VIEWS_DIR = join(ROOT_DIR, 'views');
export const PUBLIC_DIR = join(ROOT_DIR, 'public');
/** uPlot's browser build, served from node_modules (no CDN). */
export const UPLOT_DIR = join(ROOT_DIR, 'node_modules', 'uplot', 'dist');
