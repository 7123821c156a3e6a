/**
 * Reading what a browser posted (`@fastify/formbody`: a field is a string, or an array of
 * strings when repeated) and looking a name from the request up in a table of our own, for
 * every console form. A posted or requested name is never trusted as a property key: only own
 * entries count, so `__proto__` or `constructor` finds nothing.
 */

/** A parsed form body (absent for a POST without one). */
export type FormBody = Record<string, unknown> | undefined;

/** The first value of a form field ('' when absent). */
export function one(body: FormBody, key: string): string {
  const v = body?.[key];
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first : '';
}

/** Every value of a repeated form field (checkboxes, multi-selects), in order. */
export function many(body: FormBody, key: string): string[] {
  const v = body?.[key];
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === 'string');
}

/** `table[key]` when `key` is an own entry of it (never one of Object.prototype's). */
export function ownEntry<T>(table: Readonly<Record<string, T>>, key: string | undefined): T | undefined {
  return key !== undefined && Object.hasOwn(table, key) ? table[key] : undefined;
}
