/**
 * A job's params as jobs.db keeps them (JSON): a bigint seed becomes its decimal text, so
 * it is kept exactly and shown as sent.
 */
export function storableParams(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) out[key] = typeof value === 'bigint' ? value.toString() : value;
  return out;
}
