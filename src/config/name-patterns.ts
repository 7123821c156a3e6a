/**
 * The alias table (`virtual_models`, or the store's copy of it), with glob patterns.
 *
 * A key with `*` (any run of characters) or `?` (one character) is a pattern: Claude Code
 * asks for `claude-sonnet-4-5-20250929` and friends when no model is configured, so
 * `"claude-*-haiku*": small-local` lets a user set only the base URL and a key. Lookup order:
 * the exact key, else the longest matching pattern (the most specific wins; equal lengths:
 * the first in the table). Patterns are not listed in `/v1/models` (they name no one model).
 */
import type { VirtualModel } from './types.ts';

/** `T`: what a key names (a virtual model here; the same rule keys backends' prices, backends/pricing.ts). */
export interface AliasPattern<T = VirtualModel> {
  pattern: string;
  target: T;
  matcher: RegExp;
}

export interface AliasTable<T = VirtualModel> {
  /** Keys without wildcards, looked up as they are. */
  readonly exact: Readonly<Record<string, T>>;
  /** Pattern keys, longest first. */
  readonly patterns: readonly AliasPattern<T>[];
}

export interface AliasMatch<T = VirtualModel> {
  /** The alias key that matched: the requested name itself, or the pattern. */
  alias: string;
  target: T;
}

export function isAliasPattern(key: string): boolean {
  return key.includes('*') || key.includes('?');
}

/** Splits a table into exact keys and compiled patterns (done once per config, not per call). */
export function compileAliases<T = VirtualModel>(table: Readonly<Record<string, T>>): AliasTable<T> {
  const exact: Record<string, T> = {};
  const patterns: AliasPattern<T>[] = [];
  for (const [key, target] of Object.entries(table)) {
    if (isAliasPattern(key)) patterns.push({ pattern: key, target, matcher: globMatcher(key) });
    else exact[key] = target;
  }
  // a stable sort: equal lengths keep table order
  patterns.sort((a, b) => b.pattern.length - a.pattern.length);
  return { exact, patterns };
}

/** The exact alias named `requested`, if there is one. */
export function exactAlias<T>(table: AliasTable<T>, requested: string): AliasMatch<T> | undefined {
  return Object.hasOwn(table.exact, requested) ? { alias: requested, target: table.exact[requested] } : undefined;
}

/** The most specific pattern matching `requested`, if any. */
export function patternAlias<T>(table: AliasTable<T>, requested: string): AliasMatch<T> | undefined {
  for (const p of table.patterns) if (p.matcher.test(requested)) return { alias: p.pattern, target: p.target };
  return undefined;
}

/** A whole-string matcher for a glob with `*` and `?` (every other character literal). */
export function globMatcher(glob: string): RegExp {
  let source = '';
  for (const ch of glob) {
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else source += ch.replace(/[\\^$.+()[\]{}|/-]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}
