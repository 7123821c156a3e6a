/**
 * What a ComfyUI box can run, read from its `GET /object_info`: the model files its loader
 * nodes offer (checkpoints, UNETs — GGUF loaders included — VAEs, CLIPs, LoRAs) and the node
 * classes it knows. Pure: object_info in, inventory out. A loader is recognised by its input
 * names, not its class, so custom loaders (ComfyUI-GGUF, the rgthree LoRA stack with
 * `lora_01…`) count without a list of them.
 */
import { comboChoices } from './combo.ts';
import { isLoraParam } from './lora-params.ts';
import type { ObjectInfo } from './types.ts';

export interface MediaInventory {
  checkpoints: string[];
  unets: string[];
  vaes: string[];
  clips: string[];
  loras: string[];
  /** Every node class the backend knows. */
  classes: string[];
}

type Kind = Exclude<keyof MediaInventory, 'classes'>;

/** Which inventory list an input name fills. */
function kindOf(input: string): Kind | undefined {
  if (input === 'ckpt_name') return 'checkpoints';
  if (input === 'unet_name' || input === 'gguf_name') return 'unets';
  if (input === 'vae_name') return 'vaes';
  if (/^clip_name\d*$/.test(input)) return 'clips';
  if (input === 'lora_name' || isLoraParam(input)) return 'loras';
  return undefined;
}

/** The inventory of an object_info body; throws on something that is not one. */
export function inventoryOf(objectInfo: unknown): MediaInventory {
  if (typeof objectInfo !== 'object' || objectInfo === null || Array.isArray(objectInfo)) {
    throw new Error('GET /object_info did not answer with a JSON object of node classes');
  }
  const found: Record<Kind, Set<string>> = {
    checkpoints: new Set(),
    unets: new Set(),
    vaes: new Set(),
    clips: new Set(),
    loras: new Set(),
  };
  for (const info of Object.values(objectInfo as Record<string, unknown>)) {
    const input = (info as { input?: { required?: unknown; optional?: unknown } } | null)?.input;
    for (const group of [input?.required, input?.optional]) {
      if (typeof group !== 'object' || group === null) continue;
      for (const [name, spec] of Object.entries(group)) {
        const kind = kindOf(name);
        if (!kind) continue;
        // "None" is the rgthree stack's empty slot, not a file
        for (const option of comboChoices(spec) ?? []) {
          if (typeof option === 'string' && option !== 'None') found[kind].add(option);
        }
      }
    }
  }
  const sorted = (s: Set<string>) => [...s].sort();
  return {
    checkpoints: sorted(found.checkpoints),
    unets: sorted(found.unets),
    vaes: sorted(found.vaes),
    clips: sorted(found.clips),
    loras: sorted(found.loras),
    classes: Object.keys(objectInfo).sort(),
  };
}

/**
 * The LoRA files a server offers: the union of the `lora_name` / `lora_NN` combo choices of
 * every class that has one (core loaders, hook loaders, rgthree's stack when installed).
 * `None` is rgthree's "empty slot", not a file, so it is left out.
 */
export function installedLoras(objectInfo: ObjectInfo): string[] {
  // one walk per object_info read (the dump is large; every job's compile asks)
  let loras = lorasOf.get(objectInfo);
  if (!loras) {
    loras = inventoryOf(objectInfo).loras;
    lorasOf.set(objectInfo, loras);
  }
  return loras;
}

const lorasOf = new WeakMap<ObjectInfo, string[]>();
