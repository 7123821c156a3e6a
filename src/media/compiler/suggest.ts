/**
 * A mapping guessed from a workflow's conventions, for aliases that give none (or only some):
 *
 * - a node titled `input_<name>` maps param `<name>` to its one value field (a primitive's
 *   `value`, a text encoder's `text`, a loader's `image`, or the node's only literal input).
 *   The names are tidied: `prompt_positiv(e)` → `prompt`, `prompt_negativ(e)` → `negative_prompt`,
 *   `reference_image_2` / `image2` → `image_2`, `mask` likewise. Model loaders are left out
 *   (a model file is the operator's choice, not a request's).
 * - `CLIPTextEncode`: the one reached from a sampler's `negative` input is `negative_prompt`,
 *   the other one `prompt`.
 * - `Empty…Latent…`: `width`, `height`, `batch` (from `batch_size`), `seconds`, `length`.
 * - `KSampler` / `KSamplerAdvanced` (+ `RandomNoise`, `BasicScheduler`, `KSamplerSelect`,
 *   `CFGGuider`, `FluxGuidance`): `seed`, `steps`, `cfg`, `sampler`, `scheduler`, `denoise`, `guidance`.
 * - image loaders not claimed by a title: `image`, `image_2`, … (`mask`, `mask_2`, … for mask loaders).
 *
 * Only literal fields are suggested (a linked field is set where the link comes from). Titles
 * win over class rules; a class rule that several nodes match is left out, as a guess would
 * set one sampler of two. An explicit mapping always wins over all of this (see `effectiveMapping`).
 */
import { isImageLoaderClass, isMaskLoaderClass } from './object-info.ts';
import { sortedIds } from './graph.ts';
import { isLink, type Mapping, type ObjectInfo, type Workflow } from './types.ts';

const MODEL_LOADER = /Loader|LoadModel|Checkpoint|Lora/;
const TITLE_ALIASES: Record<string, string> = {
  prompt_positiv: 'prompt',
  prompt_positive: 'prompt',
  positive_prompt: 'prompt',
  positive: 'prompt',
  prompt_negativ: 'negative_prompt',
  prompt_negative: 'negative_prompt',
  prompt_negavtive: 'negative_prompt',
  negative: 'negative_prompt',
};

const SAMPLER_FIELDS: Record<string, Record<string, string>> = {
  KSampler: {
    seed: 'seed',
    steps: 'steps',
    cfg: 'cfg',
    sampler_name: 'sampler',
    scheduler: 'scheduler',
    denoise: 'denoise',
  },
  KSamplerAdvanced: { noise_seed: 'seed', steps: 'steps', cfg: 'cfg', sampler_name: 'sampler', scheduler: 'scheduler' },
  RandomNoise: { noise_seed: 'seed' },
  BasicScheduler: { steps: 'steps', scheduler: 'scheduler', denoise: 'denoise' },
  KSamplerSelect: { sampler_name: 'sampler' },
  CFGGuider: { cfg: 'cfg' },
  FluxGuidance: { guidance: 'guidance' },
};
const LATENT_FIELDS: Record<string, string> = {
  width: 'width',
  height: 'height',
  batch_size: 'batch',
  seconds: 'seconds',
  length: 'length',
};

/** `objectInfo` is taken for symmetry with validateAlias; the conventions need only the graph today. */
export function suggestMapping(workflow: Workflow, _objectInfo?: ObjectInfo): Mapping {
  const mapping: Mapping = {};
  const claimed = new Set<string>();
  const ids = sortedIds(Object.keys(workflow));
  const literal = (id: string, field: string) =>
    Object.hasOwn(workflow[id].inputs, field) && !isLink(workflow[id].inputs[field]);
  const claim = (param: string, node: string, field: string) => {
    mapping[param] = { node, field };
    claimed.add(node);
  };

  for (const id of ids) {
    const title = workflow[id]._meta?.title;
    if (!title?.startsWith('input_')) continue;
    const field = titleField(workflow, id);
    if (!field || !literal(id, field)) continue;
    let param = paramFromTitle(title.slice('input_'.length));
    if (isImageLoaderClass(workflow[id].class_type)) param = nextFree(mapping, param.replace(/_\d+$/, ''), param);
    if (!param || Object.hasOwn(mapping, param)) continue;
    claim(param, id, field);
  }

  // class rules: one candidate per param, or none
  const candidates = new Map<string, Array<{ node: string; field: string }>>();
  const offer = (param: string, node: string, field: string) => {
    if (Object.hasOwn(mapping, param) || claimed.has(node) || !literal(node, field)) return;
    candidates.set(param, [...(candidates.get(param) ?? []), { node, field }]);
  };
  for (const id of ids) {
    const cls = workflow[id].class_type;
    const fields = SAMPLER_FIELDS[cls] ?? (/^Empty.*Latent/.test(cls) ? LATENT_FIELDS : undefined);
    if (fields) for (const [field, param] of Object.entries(fields)) offer(param, id, field);
  }
  for (const [param, list] of candidates) {
    const pick = list.length === 1 ? list[0] : param === 'seed' ? noiseAddingSampler(workflow, list) : undefined;
    if (pick) mapping[param] = pick;
  }

  suggestTextEncoders(workflow, ids, mapping, claimed);
  for (const id of ids) {
    const cls = workflow[id].class_type;
    if (claimed.has(id) || !isImageLoaderClass(cls) || !literal(id, 'image')) continue;
    const base = isMaskLoaderClass(cls) ? 'mask' : 'image';
    claim(nextFree(mapping, base, base), id, 'image');
  }
  return mapping;
}

/** The field a titled node's value goes to, or undefined when it has no single obvious one. */
function titleField(workflow: Workflow, id: string): string | undefined {
  const node = workflow[id];
  const cls = node.class_type;
  if (cls.startsWith('Primitive') && Object.hasOwn(node.inputs, 'value')) return 'value';
  if (cls === 'CLIPTextEncode') return 'text';
  if (isImageLoaderClass(cls)) return 'image';
  if (MODEL_LOADER.test(cls) || /^Empty.*Latent/.test(cls)) return undefined;
  const literals = Object.keys(node.inputs).filter((k) => !isLink(node.inputs[k]));
  return literals.length === 1 ? literals[0] : undefined;
}

export function paramFromTitle(raw: string): string {
  let name = raw
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (Object.hasOwn(TITLE_ALIASES, name)) return TITLE_ALIASES[name];
  name = name.replace(/^reference_/, '');
  const numbered = /^(image|mask)_?(\d+)$/.exec(name);
  if (numbered) return numbered[2] === '1' ? numbered[1] : `${numbered[1]}_${numbered[2]}`;
  return name;
}

/** `wanted` if free, else `base`, `base_2`, `base_3`, … */
function nextFree(mapping: Mapping, base: string, wanted: string): string {
  if (!Object.hasOwn(mapping, wanted)) return wanted;
  for (let i = 1; ; i++) {
    const name = i === 1 ? base : `${base}_${i}`;
    if (!Object.hasOwn(mapping, name)) return name;
  }
}

/** Of several samplers, the one that adds the noise (Wan's two-stage KSamplerAdvanced pair). */
function noiseAddingSampler(workflow: Workflow, list: Array<{ node: string; field: string }>) {
  const adding = list.filter((c) => workflow[c.node].inputs.add_noise !== 'disable');
  return adding.length === 1 ? adding[0] : undefined;
}

function suggestTextEncoders(workflow: Workflow, ids: string[], mapping: Mapping, claimed: Set<string>): void {
  const encoders = ids.filter((id) => workflow[id].class_type === 'CLIPTextEncode' && !claimed.has(id));
  if (encoders.length === 0) return;
  const negative = new Set<string>();
  const positive = new Set<string>();
  for (const id of ids) {
    const inputs = workflow[id].inputs;
    if (isLink(inputs.negative)) traceEncoders(workflow, inputs.negative[0], 'negative', negative);
    if (isLink(inputs.positive)) traceEncoders(workflow, inputs.positive[0], 'positive', positive);
    if (isLink(inputs.conditioning) && /Guider/.test(workflow[id].class_type))
      traceEncoders(workflow, inputs.conditioning[0], 'positive', positive);
  }
  const literalText = (id: string) => typeof workflow[id].inputs.text === 'string';
  const neg = encoders.filter((id) => negative.has(id) && !positive.has(id) && literalText(id));
  if (neg.length === 1 && !Object.hasOwn(mapping, 'negative_prompt'))
    mapping.negative_prompt = { node: neg[0], field: 'text' };
  const rest = encoders.filter((id) => !negative.has(id) && literalText(id));
  const pos = rest.filter((id) => positive.has(id));
  const pick = pos.length === 1 ? pos[0] : pos.length === 0 && rest.length === 1 ? rest[0] : undefined;
  if (pick && !Object.hasOwn(mapping, 'prompt')) mapping.prompt = { node: pick, field: 'text' };
}

/** Walks conditioning upstream to the text encoders, keeping to one polarity where a node has both. */
function traceEncoders(workflow: Workflow, start: string, polarity: 'positive' | 'negative', found: Set<string>): void {
  const seen = new Set<string>();
  const walk = (id: string, depth: number) => {
    if (depth > 8 || seen.has(id) || !Object.hasOwn(workflow, id)) return;
    seen.add(id);
    const node = workflow[id];
    if (node.class_type === 'CLIPTextEncode') return void found.add(id);
    // a zeroed-out conditioning carries no text: its source is not this polarity's prompt
    if (node.class_type === 'ConditioningZeroOut') return;
    const inputs = node.inputs;
    const follow =
      isLink(inputs.positive) && isLink(inputs.negative)
        ? [polarity]
        : Object.keys(inputs).filter((k) => k.startsWith('conditioning'));
    for (const field of follow) {
      const value = inputs[field];
      if (isLink(value)) walk(value[0], depth + 1);
    }
  };
  walk(start, 0);
}
