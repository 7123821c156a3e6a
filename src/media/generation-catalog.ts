/**
 * The generation aliases (`image_models`) as the media layer runs them: per alias its ordered
 * candidates, each a comfyui backend and the compiler's alias for it (the entry's workflow,
 * pins, bypass and output, with the alias's one mapping: the first entry's); their problems
 * against each backend's object_info; the LoRAs an alias can use where. Pure apart from the
 * getters it is given. The table is rebuilt only when the configuration object changes (a
 * reload or a store edit makes a new one), never per call.
 *
 * An entry that cannot run (its backend is unknown or not a comfyui one, a second entry for
 * the same backend, no usable workflow) is not a candidate and is reported by `problems()`;
 * an alias with no candidate left is not listed at all.
 */
import { isDeepStrictEqual } from 'node:util';
import { workflowShapeProblem } from '../config/media-schema.ts';
import { childPath } from '../config/problems.ts';
import type { GatewayConfig, ImageModelEntry } from '../config/types.ts';
import { validateAlias, type GenerationAlias, type ObjectInfo, type Problem } from './compiler/index.ts';
import { aliasLimits, type GenerationLimits } from './request-bounds.ts';
import { descriptorFor } from '../backends/kinds/index.ts';

export interface GenerationCandidate {
  backend: string;
  alias: GenerationAlias;
}

export interface GenerationModel {
  name: string;
  candidates: GenerationCandidate[];
  /** The size bounds of a request (the strictest of the candidates' entries). */
  limits: GenerationLimits;
}

export interface GenerationCatalogDeps {
  config: () => GatewayConfig;
  objectInfo: (backend: string) => ObjectInfo | undefined;
  /** The LoRA files installed on a backend (its inventory), or undefined when not known yet. */
  loras: (backend: string) => string[] | undefined;
}

interface Compiled {
  models: Map<string, GenerationModel>;
  /** Every candidate with the key paths of its entry and of the alias's mapping (the first entry's), for validation. */
  checks: {
    path: string;
    mappingAt: string;
    candidate: GenerationCandidate;
    last?: { info: ObjectInfo | undefined; problems: Problem[] };
  }[];
  /** Problems found without any object_info (entries that are no candidate, ignored mappings). */
  structural: Problem[];
}

export class GenerationCatalog {
  private compiled?: { models: GatewayConfig['image_models']; backends: GatewayConfig['backends']; table: Compiled };

  constructor(private readonly deps: GenerationCatalogDeps) {}

  /** Aliases with at least one candidate, in configuration order. */
  names(): string[] {
    return [...this.table().models.keys()];
  }

  get(alias: string): GenerationModel | undefined {
    return this.table().models.get(alias);
  }

  /**
   * Everything wrong with the aliases: entries that cannot be candidates, ignored mappings,
   * and `validateAlias` of every candidate against its backend's object_info when known
   * (without it, what the workflow alone shows). Key paths `image_models.<alias>[i]…`.
   */
  problems(): Problem[] {
    const table = this.table();
    const out = [...table.structural];
    for (const check of table.checks) {
      const info = this.deps.objectInfo(check.candidate.backend);
      if (!check.last || check.last.info !== info) check.last = { info, problems: validated(check, info) };
      out.push(...check.last.problems);
    }
    return out;
  }

  /** The union of LoRAs installed across the alias's backends, sorted; undefined for an unknown alias. */
  loras(alias: string): string[] | undefined {
    const model = this.get(alias);
    if (!model) return undefined;
    const all = new Set<string>();
    for (const c of model.candidates) for (const lora of this.deps.loras(c.backend) ?? []) all.add(lora);
    return [...all].sort();
  }

  /**
   * The candidates that have every LoRA in `wanted` installed (a backend whose inventory is
   * not known yet counts as lacking them), in order, and the wanted LoRAs no candidate has.
   * Busy or down backends count too: this decides where a job may park, not where it runs now.
   */
  withLoras(
    alias: string,
    wanted: readonly string[],
  ): { candidates: GenerationCandidate[]; missingEverywhere: string[] } {
    const model = this.get(alias);
    if (!model) return { candidates: [], missingEverywhere: [] };
    if (wanted.length === 0) return { candidates: [...model.candidates], missingEverywhere: [] };
    const installed = new Map(model.candidates.map((c) => [c.backend, new Set(this.deps.loras(c.backend) ?? [])]));
    const candidates = model.candidates.filter((c) => wanted.every((lora) => installed.get(c.backend)!.has(lora)));
    const missingEverywhere = [...new Set(wanted)].filter(
      (lora) => ![...installed.values()].some((set) => set.has(lora)),
    );
    return { candidates, missingEverywhere };
  }

  private table(): Compiled {
    const cfg = this.deps.config();
    const c = this.compiled;
    if (c?.models !== cfg.image_models || c.backends !== cfg.backends) {
      this.compiled = { models: cfg.image_models, backends: cfg.backends, table: compile(cfg) };
    }
    return this.compiled!.table;
  }
}

function compile(cfg: GatewayConfig): Compiled {
  const types = new Map(cfg.backends.map((b) => [b.name, b.type]));
  const table: Compiled = { models: new Map(), checks: [], structural: [] };
  const error = (path: string, message: string) => table.structural.push({ path, message, severity: 'error' });
  for (const [name, entries] of Object.entries(cfg.image_models ?? {})) {
    if (!Array.isArray(entries) || entries.length === 0) continue;
    const aliasPath = childPath('image_models', name);
    const mapping = entries[0]?.mapping;
    const candidates: GenerationCandidate[] = [];
    const used: ImageModelEntry[] = [];
    const seen = new Set<string>();
    entries.forEach((entry, i) => {
      const at = childPath(aliasPath, i);
      if (i > 0 && entry.mapping !== undefined && !isDeepStrictEqual(entry.mapping, mapping)) {
        table.structural.push({
          path: childPath(at, 'mapping'),
          message:
            `is ignored: the first entry's mapping (${childPath(aliasPath, 0)}.mapping) is shared by ` +
            `all candidates of an alias`,
          severity: 'warning',
        });
      }
      const type = types.get(entry.backend);
      if (type === undefined || !descriptorFor(type).isMedia) {
        error(
          childPath(at, 'backend'),
          type === undefined
            ? 'names no configured backend'
            : `"${entry.backend}" is a backend of type ${type}; generation aliases run on comfyui backends`,
        );
        return;
      }
      if (seen.has(entry.backend)) {
        error(
          childPath(at, 'backend'),
          `backend "${entry.backend}" already has an entry in this alias; one entry per backend`,
        );
        return;
      }
      seen.add(entry.backend);
      const workflow = workflowOf(entry, at, error);
      if (!workflow) return;
      const candidate = { backend: entry.backend, alias: aliasOf(workflow, mapping, entry) };
      candidates.push(candidate);
      used.push(entry);
      table.checks.push({ path: at, mappingAt: childPath(aliasPath, 0), candidate });
    });
    if (candidates.length > 0) table.models.set(name, { name, candidates, limits: aliasLimits(used) });
  }
  return table;
}

/**
 * `validateAlias` of one candidate. The mapping is written on the alias's first entry, so a
 * later candidate's mapping problems point there, naming the backend whose workflow they are about.
 */
function validated(check: Compiled['checks'][number], info: ObjectInfo | undefined): Problem[] {
  const problems = validateAlias(check.candidate.alias, info, check.path);
  if (check.mappingAt === check.path) return problems;
  const own = `${check.path}.mapping`;
  return problems.map((p) =>
    p.path === own || p.path.startsWith(`${own}.`)
      ? {
          ...p,
          path: `${check.mappingAt}${p.path.slice(check.path.length)}`,
          message: `${p.message} (in the workflow of ${check.candidate.backend}, ${check.path})`,
        }
      : p,
  );
}

function workflowOf(
  entry: ImageModelEntry,
  at: string,
  error: (path: string, message: string) => void,
): GenerationAlias['workflow'] | undefined {
  if (entry.workflow_json === undefined) {
    if (entry.workflow !== undefined)
      error(
        childPath(at, 'workflow'),
        `the file ${entry.workflow} was not read into workflow_json (an image model from the ` +
          `store must carry the workflow itself)`,
      );
    else error(childPath(at, 'workflow_json'), 'is required (the API-format workflow)');
    return undefined;
  }
  const problem = workflowShapeProblem(entry.workflow_json);
  if (problem) {
    error(childPath(at, 'workflow_json'), problem);
    return undefined;
  }
  return entry.workflow_json;
}

function aliasOf(
  workflow: GenerationAlias['workflow'],
  mapping: ImageModelEntry['mapping'],
  entry: ImageModelEntry,
): GenerationAlias {
  return {
    workflow,
    ...(mapping !== undefined ? { mapping } : {}),
    ...(entry.fixed !== undefined ? { fixed: entry.fixed } : {}),
    ...(entry.bypass !== undefined ? { bypass: entry.bypass } : {}),
    ...(entry.output !== undefined ? { output: entry.output } : {}),
  };
}
