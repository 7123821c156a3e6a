/**
 * What a browser would submit from a form of a console page: its inputs (checkboxes only when
 * checked), textareas and selects (the selected option, else the first), entities decoded.
 * Enough for the console's own server-rendered forms; not a general HTML parser.
 */
export type FormFields = Record<string, string | string[]>;

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  '#39': "'",
  '#x27': "'",
  '#96': '`',
  '#x60': '`',
  '#61': '=',
  '#x3D': '=',
};

export function decodeHtml(text: string): string {
  return text.replace(
    /&(#?\w+);/g,
    (m, name: string) =>
      ENTITIES[name] ??
      (name.startsWith('#')
        ? String.fromCodePoint(Number(name.startsWith('#x') ? `0x${name.slice(2)}` : name.slice(1)))
        : m),
  );
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}(?:="([^"]*)")?(?=[\\s>/])`).exec(tag);
  return m ? decodeHtml(m[1] ?? '') : undefined;
}

/** The fields of the form whose opening tag matches `formMatch` (e.g. `id="mapping-editor"`). */
export function formFields(html: string, formMatch: string): FormFields {
  const start = html.indexOf(formMatch);
  if (start < 0) throw new Error(`no form ${formMatch}`);
  const open = html.lastIndexOf('<form', start);
  const body = html.slice(open, html.indexOf('</form>', start));
  const out: FormFields = {};
  const add = (name: string, value: string) => {
    const had = out[name];
    out[name] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  };
  for (const [tag] of body.matchAll(/<input\b[^>]*>/g)) {
    const name = attr(tag, 'name');
    const type = attr(tag, 'type') ?? 'text';
    if (!name || type === 'file' || type === 'submit') continue;
    if ((type === 'checkbox' || type === 'radio') && attr(tag, 'checked') === undefined) continue;
    add(name, attr(tag, 'value') ?? (type === 'checkbox' ? 'on' : ''));
  }
  for (const m of body.matchAll(/<textarea\b([^>]*)>([\s\S]*?)<\/textarea>/g)) {
    const name = attr(`<t ${m[1]}>`, 'name');
    if (name) add(name, decodeHtml(m[2]));
  }
  for (const m of body.matchAll(/<select\b([^>]*)>([\s\S]*?)<\/select>/g)) {
    const name = attr(`<s ${m[1]}>`, 'name');
    if (!name) continue;
    const options = [...m[2].matchAll(/<option\b([^>]*)>/g)].map((o) => `<o ${o[1]}>`);
    const chosen = options.find((o) => attr(o, 'selected') !== undefined) ?? options[0];
    if (chosen) add(name, attr(chosen, 'value') ?? '');
  }
  return out;
}

/** The `<option>` values of the select named `name`, with the selected one. */
export function selectOptions(html: string, name: string): { values: string[]; selected?: string } {
  const m = new RegExp(`<select\\b[^>]*name="${name}"[^>]*>([\\s\\S]*?)</select>`).exec(html);
  if (!m) return { values: [] };
  const options = [...m[1].matchAll(/<option\b([^>]*)>/g)].map((o) => `<o ${o[1]}>`);
  return {
    values: options.map((o) => attr(o, 'value') ?? ''),
    selected: options
      .map((o) => (attr(o, 'selected') !== undefined ? attr(o, 'value') : undefined))
      .find((v) => v !== undefined),
  };
}

/** The mapping rows of an editor page: param → {node, field, mode} and their row index. */
export function mappingRows(fields: FormFields): Map<string, { k: number; node: string; field: string; mode: string }> {
  const rows = new Map<string, { k: number; node: string; field: string; mode: string }>();
  const one = (key: string) => {
    const v = fields[key];
    return Array.isArray(v) ? v[0] : (v ?? '');
  };
  for (let k = 0; k < Number(one('m_count')); k++) {
    const param = one(`m${k}_param`);
    if (param) rows.set(param, { k, node: one(`m${k}_node`), field: one(`m${k}_field`), mode: one(`m${k}_mode`) });
  }
  return rows;
}
