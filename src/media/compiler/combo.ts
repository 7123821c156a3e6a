/**
 * The choices of a combo input, read from its `/object_info` declaration. ComfyUI spells a combo
 * two ways: the old list-as-type `[["a", "b"], {…}]` and the newer
 * `["COMBO", {"options": ["a", "b"], …}]` (a `COMBO` whose declaration carries no `options`
 * list, such as a remote-listed input, has no choices to offer). Pure; the one reader of both
 * spellings, for the inventory of a box and for the compiler's and console's input declarations.
 */

/**
 * A combo's choices as declared (the list itself, not a copy; any JSON type), `[]` for a
 * `COMBO` without an options list, undefined for a declaration that is no combo.
 */
export function comboChoices(spec: unknown): unknown[] | undefined {
  if (!Array.isArray(spec)) return undefined;
  const [type, config] = spec as [unknown, unknown];
  if (Array.isArray(type)) return type;
  if (type !== 'COMBO') return undefined;
  const options = (config as { options?: unknown } | null | undefined)?.options;
  return Array.isArray(options) ? options : [];
}
