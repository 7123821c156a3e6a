/**
 * What a configuration problem is and how its key path is spelled (`backends[2].url`,
 * `image_models.sd15[0].workflow`, `virtual_models["claude-*"]`). A leaf module: the schema,
 * its media part and the media catalog all name key paths the same way through it.
 */

/** One thing wrong with a configuration, at a key path such as `backends[2].url`. */
export type ConfigProblem = { path: string; message: string };

/** `base` + one more key or index, as `a.b`, `a[2]`, or `a["odd key"]` for keys with odd characters. */
export function childPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  const part = /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
  if (!base) return part.startsWith('"') ? `[${part}]` : part;
  return part.startsWith('"') ? `${base}[${part}]` : `${base}.${part}`;
}
