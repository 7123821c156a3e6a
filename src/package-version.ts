import { readFileSync } from 'node:fs';

/** package.json's version, read beside the bundle (dist/) or the source (src/): both sit one folder down. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}
