/**
 * The compiler's word on generation aliases before they are stored: the entries go through a
 * generation catalog of their own (the media layer's class, so the candidates and the
 * `validateAlias` problems — a mapping naming a node the workflow lacks, a field its class
 * lacks, against each backend's object_info when known — are exactly the ones the gateway would
 * have once they are saved). Key paths `image_models.<alias>…`. Pure apart from the getter.
 */
import { childPath, type ConfigProblem } from '../config/problems.ts';
import type { GatewayConfig, ImageModelEntry } from '../config/types.ts';
import { writeJson, type ObjectInfo, type Problem } from '../media/compiler/index.ts';
import { GenerationCatalog, type GenerationCandidate } from '../media/generation-catalog.ts';

export type ObjectInfoOf = (backend: string) => ObjectInfo | undefined;

export interface AliasCheck {
  /** Errors and warnings, key paths `image_models.<alias>…`. */
  problems: Problem[];
  /** The candidates the alias would have, in order (those that can run). */
  candidates: GenerationCandidate[];
}

/** Every problem (errors and warnings) of the aliases named, as part of `table`, on `base`'s backends. */
export function imageModelProblems(
  base: GatewayConfig,
  table: Readonly<Record<string, ImageModelEntry[]>>,
  aliases: readonly string[],
  objectInfo: ObjectInfoOf,
): Problem[] {
  if (aliases.length === 0) return [];
  const catalog = catalogOf(base, table, objectInfo);
  return catalog.problems().filter((p) => aliases.some((alias) => within(p.path, alias)));
}

/** One alias as it would be saved: its problems and candidates. */
export function checkImageAlias(
  base: GatewayConfig,
  alias: string,
  entries: ImageModelEntry[],
  objectInfo: ObjectInfoOf,
): AliasCheck {
  const catalog = catalogOf(base, { [alias]: entries }, objectInfo);
  return {
    problems: catalog.problems().filter((p) => within(p.path, alias)),
    candidates: catalog.get(alias)?.candidates ?? [],
  };
}

/**
 * What blocks storing `next` as `image_models`: the errors (warnings never block) of every alias
 * that is new or changed against `current`. An alias left as it is never blocks an edit of
 * another (its backend's object_info may have changed since it was saved).
 */
export function imageModelErrors(
  base: GatewayConfig,
  current: Readonly<Record<string, ImageModelEntry[]>> | undefined,
  next: Readonly<Record<string, ImageModelEntry[]>>,
  objectInfo: ObjectInfoOf,
): ConfigProblem[] {
  const changed = Object.keys(next).filter(
    (alias) => !current || !Object.hasOwn(current, alias) || writeJson(current[alias]) !== writeJson(next[alias]),
  );
  return imageModelProblems(base, next, changed, objectInfo)
    .filter((p) => p.severity === 'error')
    .map(({ path, message }) => ({ path, message }));
}

function catalogOf(
  base: GatewayConfig,
  table: Readonly<Record<string, ImageModelEntry[]>>,
  objectInfo: ObjectInfoOf,
): GenerationCatalog {
  const config = { ...base, image_models: { ...table } };
  return new GenerationCatalog({ config: () => config, objectInfo, loras: () => undefined });
}

function within(path: string, alias: string): boolean {
  const at = childPath('image_models', alias);
  return path === at || path.startsWith(`${at}.`) || path.startsWith(`${at}[`);
}
