/**
 * The problems config.yaml's validation and the compiler find in `image_models.<alias>…`,
 * placed next to the mapping editor's field they are about (key path → form field, through
 * the EntryIndex of the entries built from the form), and joined per field for inline display.
 */
import { childPath } from '../config/problems.ts';
import type { EditorState, EntryIndex } from './mapping-form.ts';

/** Problems written out next to one field; the summary lists them all. */
const MAX_INLINE = 2;

export interface PlacedProblem {
  path: string;
  message: string;
  severity: 'error' | 'warning';
  /** The form field it is about (an element id), when there is one. */
  field?: string;
}

/**
 * Each problem of `image_models.<alias>…` with the form field it is about; messages joined per
 * field for inline display.
 */
export function placeProblems(
  problems: readonly { path: string; message: string; severity?: 'error' | 'warning' }[],
  state: EditorState,
  index: EntryIndex,
): { placed: PlacedProblem[]; errors: Record<string, string> } {
  const aliasPath = childPath('image_models', state.alias);
  const params = state.mapping
    .map((row, k) => ({ k, param: row.param }))
    .sort((a, b) => b.param.length - a.param.length);
  const fieldOf = (path: string): string | undefined => {
    if (path === aliasPath) return 'alias';
    for (let i = 0; i < index.backendAt.length; i++) {
      const at = childPath(aliasPath, i);
      if (path !== at && !path.startsWith(`${at}.`) && !path.startsWith(`${at}[`)) continue;
      const bi = index.backendAt[i];
      const rest = path.slice(at.length);
      if (rest === '' || rest === '.backend') return `b${bi}-use`;
      if (/^\.workflow(_json)?\b/.test(rest)) return 'workflow';
      if (rest.startsWith('.mapping.')) {
        const tail = rest.slice('.mapping.'.length);
        for (const { k, param } of params) {
          if (tail === param) return `m${k}-param`;
          const leaf = tail.startsWith(`${param}.`) ? tail.slice(param.length + 1) : undefined;
          if (leaf === 'node' || leaf === 'field') return `m${k}-${leaf}`;
          if (leaf === 'on_empty') return `m${k}-mode`;
        }
        return 'mapping';
      }
      const pin = /^\.fixed\[(\d+)\](?:\.(node|field|value))?/.exec(rest);
      if (pin) {
        const j = index.pinAt[i]?.[Number(pin[1])];
        return j === undefined ? `b${bi}-pins` : `b${bi}-p${j}-${pin[2] ?? 'node'}`;
      }
      if (rest.startsWith('.bypass')) return `b${bi}-bypass`;
      if (rest.startsWith('.output')) return `b${bi}-output`;
      return `b${bi}-use`;
    }
    return undefined;
  };
  const placed: PlacedProblem[] = [];
  const inline = new Map<string, string[]>();
  const seen = new Set<string>();
  for (const p of problems) {
    const severity = p.severity ?? 'error';
    const field = fieldOf(p.path);
    const key = `${field ?? p.path}\u0000${p.message}`;
    if (seen.has(key)) continue; // the shared mapping is checked once per candidate
    seen.add(key);
    placed.push({ path: p.path, message: p.message, severity, ...(field ? { field } : {}) });
    if (field && severity === 'error') inline.set(field, [...(inline.get(field) ?? []), p.message]);
  }
  // next to a field: the first two, the rest are in the summary
  // (a workflow of 30 uninstalled classes is one line each there)
  const errors = Object.fromEntries(
    [...inline].map(([field, list]) => [
      field,
      list.length <= MAX_INLINE
        ? list.join(' ')
        : `${list.slice(0, MAX_INLINE).join(' ')} …and ${list.length - MAX_INLINE} more (see the list above).`,
    ]),
  );
  return { placed, errors };
}
