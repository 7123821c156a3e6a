/** ajv's validation errors as config problems: a key path and a sentence a person can act on. */
import type { ErrorObject } from 'ajv';
import { childPath, type ConfigProblem } from './problems.ts';

/** ajv's instancePath (`/backends/2/url`) as a key path (`backends[2].url`). */
function keyPathFromPointer(pointer: string): string {
  if (!pointer) return '';
  return pointer
    .slice(1)
    .split('/')
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<string>((path, seg) => childPath(path, /^\d+$/.test(seg) ? Number(seg) : seg), '');
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value === 'bigint' ? `an integer past 2^53 (${value})` : `${typeof value} ${JSON.stringify(value)}`;
}

export function problemFromAjv(e: ErrorObject): ConfigProblem {
  const path = keyPathFromPointer(e.instancePath);
  const hint = (e.parentSchema as { hint?: string } | undefined)?.hint;
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(e.params.additionalProperty);
      return { path: childPath(path, key), message: unknownKeyMessage(key, e.parentSchema) };
    }
    case 'required':
      return { path: childPath(path, String(e.params.missingProperty)), message: 'is required' };
    case 'type': {
      const wanted = String(e.params.type).replace(',', ' or ');
      return { path, message: hint ?? `must be ${article(wanted)}, got ${describeType(e.data)}` };
    }
    case 'enum':
      return {
        path,
        message: `must be one of ${(e.params.allowedValues as unknown[]).join(', ')}, got ${describeType(e.data)}`,
      };
    case 'minLength':
      return { path, message: hint ?? 'must not be empty' };
    case 'minProperties':
      return { path, message: hint ?? 'must not be empty' };
    default:
      return { path, message: hint ?? e.message ?? `fails ${e.keyword}` };
  }
}

function article(typeName: string): string {
  const words: Record<string, string> = { object: 'mapping', array: 'list' };
  const name = typeName
    .split(' or ')
    .map((t) => words[t] ?? t)
    .join(' or ');
  return /^[aeiou]/.test(name) ? `an ${name}` : `a ${name}`;
}

function unknownKeyMessage(key: string, parentSchema: unknown): string {
  const known = Object.keys((parentSchema as { properties?: object } | undefined)?.properties ?? {});
  const close = known.find((k) => editDistance(k, key) <= 2);
  return close ? `unknown key (did you mean "${close}"?)` : 'unknown key';
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

export function uniqueProblems(problems: ConfigProblem[]): ConfigProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const id = `${p.path}\u0000${p.message}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}
