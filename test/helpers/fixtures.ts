/**
 * Locates ../shared/fixtures (real captures, read in place, never copied). Where the folder
 * is missing, conformance tests skip loudly; under CI=true a missing folder is a failure.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const FIXTURES_DIR = process.env.LLM_GATEWAY_FIXTURES ?? join(projectRoot, '..', 'shared', 'fixtures');
export const fixturesPresent = existsSync(FIXTURES_DIR);

if (!fixturesPresent) {
  const msg = `fixtures folder not found at ${FIXTURES_DIR}: conformance tests cannot run`;
  if (process.env.CI === 'true') throw new Error(msg);
  console.warn(`\n!!! ${msg}; SKIPPING them (set LLM_GATEWAY_FIXTURES to point at it) !!!\n`);
}

/** `skip` option for node:test: a reason string when fixtures are absent, else false. */
export const skipWithoutFixtures: string | false = fixturesPresent ? false : `no fixtures at ${FIXTURES_DIR}`;

export function fixturePath(rel: string): string {
  return join(FIXTURES_DIR, rel);
}

export function readFixture(rel: string): string {
  return readFileSync(fixturePath(rel), 'utf8');
}

export function readFixtureJson<T = unknown>(rel: string): T {
  return JSON.parse(readFixture(rel)) as T;
}
