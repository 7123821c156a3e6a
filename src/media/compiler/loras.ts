/**
 * LoRA slots: where a request's `lora_1…lora_N` (+ `strength_1…`) go.
 *
 * Two kinds of slot. rgthree's `Lora Loader Stack (rgthree)` has four (`lora_01…lora_04` with
 * `strength_01…`); a slot is free when it holds `None` (rgthree's own "off") or is empty.
 * Core `LoraLoader` / `LoraLoaderModelOnly` nodes are one slot each; such a node is free when
 * its `lora_name` is empty, `None`, or starts with `placeholder` — an operator's way of saying
 * "the request's LoRA goes here". Any other name is the workflow author's choice and stays. A
 * pinned name is never free. Slots fill in order: stack by stack, slot by slot; core nodes in
 * chain order (upstream first). A free core node left over is bypassed, because ComfyUI refuses
 * a LoRA loader without a file; a free rgthree slot left over stays `None`.
 */
import { installedLoras } from './inventory.ts';
import { isLoraParam, isStrengthParam } from './lora-params.ts';
import { coerceValue } from './values.ts';
import { isLink, type CompileError, type ObjectInfo, type Workflow } from './types.ts';

export const RGTHREE_STACK = 'Lora Loader Stack (rgthree)';
const CORE_LOADERS: Record<string, string[]> = {
  LoraLoader: ['strength_model', 'strength_clip'],
  LoraLoaderModelOnly: ['strength_model'],
};

export interface LoraSlot {
  node: string;
  classType: string;
  nameField: string;
  strengthFields: string[];
  current: unknown;
  free: boolean;
}

export interface LoraRequest {
  index: number;
  name: string;
  strength?: unknown;
}

/** `pinned` holds `node\u0000field` keys. */
export function pinKey(node: string, field: string): string {
  return `${node}\u0000${field}`;
}

function isFreeCoreName(value: unknown): boolean {
  return (
    value === undefined ||
    value === '' ||
    value === 'None' ||
    (typeof value === 'string' && /^placeholder/i.test(value))
  );
}

/** Every LoRA slot of a workflow, in fill order, with whether a request may fill it. */
export function loraSlots(workflow: Workflow, pinned: ReadonlySet<string> = new Set()): LoraSlot[] {
  const slots: LoraSlot[] = [];
  for (const id of chainOrder(workflow)) {
    const node = workflow[id];
    if (node.class_type === RGTHREE_STACK) {
      const names = Object.keys(node.inputs).filter(isLoraParam).sort();
      for (const nameField of names) {
        const current = node.inputs[nameField];
        const strengthField = nameField.replace('lora_', 'strength_');
        const free =
          (current === 'None' || current === '' || current === undefined) && !pinned.has(pinKey(id, nameField));
        slots.push({ node: id, classType: node.class_type, nameField, strengthFields: [strengthField], current, free });
      }
    } else if (Object.hasOwn(CORE_LOADERS, node.class_type)) {
      const current = node.inputs.lora_name;
      const free = isFreeCoreName(current) && !pinned.has(pinKey(id, 'lora_name'));
      slots.push({
        node: id,
        classType: node.class_type,
        nameField: 'lora_name',
        strengthFields: CORE_LOADERS[node.class_type],
        current,
        free,
      });
    }
  }
  return slots;
}

/** LoRA nodes upstream first: by how many LoRA nodes feed each one's `model`, then by id. */
function chainOrder(workflow: Workflow): string[] {
  const isLora = (id: string) =>
    workflow[id] && (workflow[id].class_type === RGTHREE_STACK || Object.hasOwn(CORE_LOADERS, workflow[id].class_type));
  const depth = (id: string, seen: Set<string>): number => {
    const model = workflow[id].inputs.model;
    if (!isLink(model) || !isLora(model[0]) || seen.has(model[0])) return 0;
    seen.add(model[0]);
    return 1 + depth(model[0], seen);
  };
  const ids = Object.keys(workflow).filter(isLora);
  const depths = new Map(ids.map((id) => [id, depth(id, new Set([id]))]));
  return ids.sort((a, b) => depths.get(a)! - depths.get(b)! || Number(a) - Number(b) || (a < b ? -1 : 1));
}

/** `lora_N` / `strength_N` out of a request, or the 400 for a malformed one. */
export function loraRequests(
  request: Record<string, unknown>,
): { ok: true; loras: LoraRequest[] } | { ok: false; error: CompileError } {
  const byIndex = new Map<number, LoraRequest>();
  const strengths = new Map<number, unknown>();
  for (const [key, value] of Object.entries(request)) {
    if (isLoraParam(key)) {
      if (value === undefined || value === null || value === '' || value === 'None') continue;
      if (typeof value !== 'string') return fail(key, `${key} must be a LoRA file name`);
      const index = Number(key.slice('lora_'.length));
      byIndex.set(index, { index, name: value });
    } else if (isStrengthParam(key) && value !== undefined && value !== null)
      strengths.set(Number(key.slice('strength_'.length)), value);
  }
  for (const [index, value] of strengths) {
    const lora = byIndex.get(index);
    if (!lora) return fail(`strength_${index}`, `strength_${index} has no lora_${index}`);
    lora.strength = value;
  }
  return { ok: true, loras: [...byIndex.values()].sort((a, b) => a.index - b.index) };
}

/**
 * Writes the requested LoRAs into the free slots of `prompt`; returns the free core nodes left
 * over (to bypass), or the 400 for too many LoRAs, an uninstalled one, or a bad strength.
 */
export function applyLoras(
  prompt: Workflow,
  loras: LoraRequest[],
  pinned: ReadonlySet<string>,
  objectInfo: ObjectInfo | undefined,
): { ok: true; unusedCoreNodes: string[] } | { ok: false; error: CompileError } {
  const free = loraSlots(prompt, pinned).filter((s) => s.free);
  if (loras.length > free.length) {
    const first = loras[free.length];
    return fail(
      `lora_${first.index}`,
      `this model takes at most ${free.length} LoRA${free.length === 1 ? '' : 's'}; ${loras.length} were given`,
    );
  }
  const installed = objectInfo ? installedLoras(objectInfo) : [];
  for (const [i, lora] of loras.entries()) {
    const slot = free[i];
    if (installed.length > 0 && !installed.includes(lora.name))
      return fail(`lora_${lora.index}`, `LoRA '${lora.name}' is not installed on this server`);
    prompt[slot.node].inputs[slot.nameField] = lora.name;
    if (lora.strength === undefined) continue;
    const strength = coerceValue(lora.strength, undefined, 1);
    if (!strength.ok || typeof strength.value !== 'number')
      return fail(`strength_${lora.index}`, `strength_${lora.index} must be a number`);
    for (const field of slot.strengthFields) {
      if (pinned.has(pinKey(slot.node, field)))
        return fail(`strength_${lora.index}`, `the strength of this LoRA slot is fixed for this model`);
      prompt[slot.node].inputs[field] = strength.value;
    }
  }
  const leftover = free.slice(loras.length);
  for (const slot of leftover) if (slot.classType === RGTHREE_STACK) prompt[slot.node].inputs[slot.nameField] = 'None';
  return {
    ok: true,
    unusedCoreNodes: [...new Set(leftover.filter((s) => s.classType !== RGTHREE_STACK).map((s) => s.node))],
  };
}

function fail(param: string, message: string): { ok: false; error: CompileError } {
  return { ok: false, error: { status: 400, message, param } };
}
