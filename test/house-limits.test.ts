/**
 * The house limits of ARCHITECTURE.md §11 for src/: no file over 400 lines, no line over 120
 * characters. A failure names every file over a limit (and the lines too long), so a split or a
 * rewrap can start from the message. Prettier (printWidth 120) cannot keep the second one alone:
 * it never breaks a string, a template or a comment.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const ROOT = join(import.meta.dirname, '..');
const MAX_LINES = 400;
const MAX_COLUMNS = 120;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out.sort();
}

const files = sourceFiles(join(ROOT, 'src')).map((path) => ({
  name: relative(ROOT, path),
  text: readFileSync(path, 'utf8'),
}));

test(`no file in src/ is over ${MAX_LINES} lines`, () => {
  assert.ok(files.length > 0, 'src/ has no .ts files: wrong root?');
  // counted as `wc -l` does: newline characters
  const over = files
    .map(({ name, text }) => ({ name, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) }))
    .filter((f) => f.lines > MAX_LINES)
    .map((f) => `${f.name}: ${f.lines} lines`);
  assert.deepEqual(over, [], `files over ${MAX_LINES} lines:\n${over.join('\n')}`);
});

test(`no line in src/ is over ${MAX_COLUMNS} characters`, () => {
  const long: string[] = [];
  for (const { name, text } of files) {
    text.split('\n').forEach((line, i) => {
      const width = [...line].length; // characters, not UTF-16 units
      if (width > MAX_COLUMNS) long.push(`${name}:${i + 1}: ${width} characters`);
    });
  }
  assert.deepEqual(long, [], `lines over ${MAX_COLUMNS} characters:\n${long.join('\n')}`);
});
