/**
 * The import graph of src/: every relative import of every .ts file, resolved to a path
 * relative to src/. Static text scan (import/export … from '…' and import('…')); type-only
 * imports count too, as they tie the rooms together just the same. Pure apart from reading files.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

export type ImportGraph = Map<string, string[]>;

const SPECIFIER = /(?:^|\s)(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function listTs(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...listTs(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** Reads src/ under `root` into a graph keyed by paths relative to src/ (e.g. `upstream/proxy.ts`). */
export function readImportGraph(root: string): ImportGraph {
  const src = join(root, 'src');
  const graph: ImportGraph = new Map();
  for (const file of listTs(src)) {
    const text = readFileSync(file, 'utf8');
    const targets = new Set<string>();
    for (const match of text.matchAll(SPECIFIER)) {
      const spec = match[1] ?? match[2];
      const target = relative(src, normalize(join(dirname(file), spec)));
      if (target.endsWith('.ts')) targets.add(target);
    }
    graph.set(relative(src, file), [...targets]);
  }
  return graph;
}

/** The folder a file lives in, one level under src/ ('.' for src/ itself). */
export function roomOf(path: string): string {
  const slash = path.indexOf('/');
  return slash < 0 ? '.' : path.slice(0, slash);
}

/** Strongly connected components of more than one file (Tarjan), each sorted. */
export function fileCycles(graph: ImportGraph): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    indexOf.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!indexOf.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, indexOf.get(next)!));
    }
    if (low.get(node) === indexOf.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!indexOf.has(node)) visit(node);
  return cycles;
}

/** Imports between rooms, counted per ordered pair `from→to`. */
export function roomEdges(graph: ImportGraph): Map<string, number> {
  const edges = new Map<string, number>();
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const a = roomOf(from);
      const b = roomOf(to);
      if (a === b) continue;
      const key = `${a}→${b}`;
      edges.set(key, (edges.get(key) ?? 0) + 1);
    }
  }
  return edges;
}

/** Pairs of rooms that import each other, as `a⇄b` with both counts. */
export function mutualRooms(graph: ImportGraph): string[] {
  const edges = roomEdges(graph);
  const pairs: string[] = [];
  for (const [key, count] of edges) {
    const [a, b] = key.split('→');
    const back = edges.get(`${b}→${a}`);
    if (back !== undefined && a < b) pairs.push(`${a}⇄${b} ${count}/${back}`);
  }
  return pairs.sort();
}
