/** What the alias table decides beyond its patterns (config/name-patterns.ts). */
import type { GatewayConfig } from '../config/types.ts';

export {
  compileAliases,
  exactAlias,
  globMatcher,
  isAliasPattern,
  patternAlias,
  type AliasMatch,
  type AliasPattern,
  type AliasTable,
} from '../config/name-patterns.ts';

/** The longest a call for `alias` may park, seconds: its `alias_park` entry, else `park_timeout_s`. */
export function parkSeconds(cfg: Pick<GatewayConfig, 'alias_park' | 'park_timeout_s'>, alias: string): number {
  return Object.hasOwn(cfg.alias_park, alias) ? cfg.alias_park[alias] : cfg.park_timeout_s;
}
