/** Small formatting helpers the templates use (`it.fmt.…`). Pure. */

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60_000);
  return m < 60 ? `${m} min ${Math.round((ms % 60_000) / 1000)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function ago(ts: number | null | undefined, now = Date.now()): string {
  if (!ts) return '–';
  return `${duration(Math.max(0, now - ts))} ago`;
}

export function time(ts: number | null | undefined): string {
  if (!ts) return '–';
  return new Date(ts).toISOString().replace('T', ' ').slice(0, 19);
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

export function int(n: number | null | undefined): string {
  return n === null || n === undefined ? '–' : Math.round(n).toLocaleString('en-US');
}

export function usd(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  return n === 0 ? '$0' : n < 0.01 ? `$${n.toFixed(5)}` : `$${n.toFixed(2)}`;
}

export function percent(part: number, whole: number): number {
  return whole > 0 ? Math.min(100, Math.max(0, Math.round((part / whole) * 100))) : 0;
}

/** JSON with 2-space indents in which a bigint is written as its digits (the prompt's big seeds stay exact). */
export function prettyJson(value: unknown, indent = 2, depth = 0): string {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  const pad = indent ? `\n${' '.repeat(indent * (depth + 1))}` : '';
  const end = indent ? `\n${' '.repeat(indent * depth)}` : '';
  const sep = indent ? ': ' : ':';
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    // links and short lists on one line, as ComfyUI writes them
    if (value.every((v) => v === null || typeof v !== 'object'))
      return `[${value.map((v) => prettyJson(v, 0)).join(', ')}]`;
    return `[${value.map((v) => `${pad}${prettyJson(v, indent, depth + 1)}`).join(',')}${end}]`;
  }
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return '{}';
  const members = entries.map(([k, v]) => `${pad}${JSON.stringify(k)}${sep}${prettyJson(v, indent, depth + 1)}`);
  return `{${members.join(',')}${end}}`;
}

export const fmt = { duration, ago, time, bytes, int, usd, percent };
