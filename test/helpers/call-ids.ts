/** Every call-log id a gateway's admin API lists (queued rows included), page by page. */
import assert from 'node:assert/strict';
import type { ApiAnswer } from './admin-api.ts';

type Api = (method: string, path: string, body?: unknown, key?: string | null) => Promise<ApiAnswer>;

export async function allCallIds(api: Api): Promise<number[]> {
  const ids: number[] = [];
  for (let before = ''; ;) {
    const page = await api('GET', `/admin/api/calls?limit=1000${before}`);
    assert.equal(page.status, 200, page.text);
    const rows = page.json.data as { id: number }[];
    ids.push(...rows.map((r) => r.id));
    if (rows.length < 1000) return ids;
    before = `&before_id=${rows[rows.length - 1]!.id}`;
  }
}
