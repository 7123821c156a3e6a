/**
 * The house's rules, read off the import graph of src/ (scripts/lib/import-graph.ts):
 * no file cycles, no import from a lower layer to a higher one, and at most three pairs of
 * rooms that import each other, each explained in docs/architecture.md.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fileCycles, readImportGraph, type ImportGraph } from '../scripts/lib/import-graph.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Files at the top of src/ that belong to the ground floor; every other top-level file sits on top. */
const FLOOR_FILES = new Set(['json.ts', 'errors.ts', 'logging.ts']);

/** The layers, lowest first (docs/architecture.md): a room may import its own layer and those below. */
const LAYER: Record<string, number> = {
  floor: 0,
  wire: 0,
  config: 1,
  store: 2,
  backends: 3,
  routing: 4,
  auth: 4,
  scheduler: 4,
  stats: 4,
  alerts: 4,
  bridges: 5,
  upstream: 6,
  surfaces: 7,
  responses: 8,
  media: 8,
  admin: 9,
  routes: 9,
  ui: 10,
  cluster: 10,
  top: 11,
};

function roomOf(path: string): string {
  if (path.includes('/')) return path.slice(0, path.indexOf('/'));
  return FLOOR_FILES.has(path) ? 'floor' : 'top';
}

function crossRoomImports(graph: ImportGraph): { from: string; to: string; a: string; b: string }[] {
  const edges = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const a = roomOf(from);
      const b = roomOf(to);
      if (a !== b) edges.push({ from, to, a, b });
    }
  }
  return edges;
}

const graph = readImportGraph(ROOT);

test('the graph is read: every room of src/ has a layer', () => {
  assert.ok(graph.size > 300, `only ${graph.size} files read`);
  const rooms = new Set([...graph.keys()].map(roomOf));
  const unranked = [...rooms].filter((room) => LAYER[room] === undefined);
  assert.deepEqual(unranked, [], 'a new room needs its place in LAYER and in docs/architecture.md');
});

test('no file cycles in src/', () => {
  assert.deepEqual(fileCycles(graph), []);
});

test('no import climbs from a lower layer to a higher one', () => {
  const climbing = crossRoomImports(graph)
    .filter(({ a, b }) => LAYER[b] > LAYER[a])
    .map(({ from, to }) => `${from} -> ${to}`);
  assert.deepEqual(climbing, []);
});

test('at most three pairs of rooms import each other, each explained in docs/architecture.md', () => {
  const edges = new Set(crossRoomImports(graph).map(({ a, b }) => `${a}→${b}`));
  const mutual = [...edges]
    .map((edge) => edge.split('→'))
    .filter(([a, b]) => a < b && edges.has(`${b}→${a}`))
    .map(([a, b]) => `${a}⇄${b}`);
  assert.ok(mutual.length <= 3, `mutual pairs: ${mutual.join(', ')}`);
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  for (const pair of mutual) assert.ok(doc.includes(pair), `docs/architecture.md says nothing of ${pair}`);
});

test('the check can fail: a made-up cycle and a made-up climbing import are found', () => {
  const made: ImportGraph = new Map([
    ['wire/a.ts', ['wire/b.ts']],
    ['wire/b.ts', ['wire/a.ts', 'upstream/c.ts']],
    ['upstream/c.ts', []],
  ]);
  assert.deepEqual(fileCycles(made), [['wire/a.ts', 'wire/b.ts']]);
  const climbing = crossRoomImports(made).filter(({ a, b }) => LAYER[b] > LAYER[a]);
  assert.deepEqual(
    climbing.map(({ from, to }) => `${from} -> ${to}`),
    ['wire/b.ts -> upstream/c.ts'],
  );
});
