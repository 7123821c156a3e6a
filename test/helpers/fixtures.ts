/**
 * The captures and workflows under test/fixtures (see its README for each file's source and
 * licence). They ship with the repository, so every test that reads them always runs.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

export function fixturePath(rel: string): string {
  return join(FIXTURES_DIR, rel);
}

export function readFixture(rel: string): string {
  return readFileSync(fixturePath(rel), 'utf8');
}

export function readFixtureJson<T = unknown>(rel: string): T {
  return JSON.parse(readFixture(rel)) as T;
}
