/** Small JSON helpers every layer uses: the one object test, and a parse that never throws. */

export type JsonObject = Record<string, unknown>;

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The JSON object `text` holds, or undefined for anything else (not JSON, an array, a scalar). */
export function parseObject(text: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
