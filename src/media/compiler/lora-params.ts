/**
 * The names of LoRA parameters: a request's `lora_1…` / `strength_1…` and an rgthree stack's
 * `lora_01…` / `strength_01…` inputs. Pure, and imports nothing: the inventory and the LoRA
 * slots both read them.
 */

/** A request's (or an rgthree stack's) LoRA name key: `lora_1`, `lora_01`… */
export function isLoraParam(key: string): boolean {
  return /^lora_\d+$/.test(key);
}

/** A request's LoRA strength key: `strength_1`… */
export function isStrengthParam(key: string): boolean {
  return /^strength_\d+$/.test(key);
}
