/**
 * The call log's `route` column: why the scheduler chose the backend (`CallOutcome.route`, the
 * lease's route, e.g. `spill: local eta 41 s > 10 s`) reaches the row, queued and on disk and
 * after a restart, the admin API's call list, and the console (a word in the list with the
 * whole text in its title, the whole text on the call's page). A call without one has null; an
 * older stats.db gains the column.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CallLog } from '../src/stats/call-log.ts';
import { STATS_MIGRATIONS } from '../src/store/calls-migrations.ts';
import { openDatabase } from '../src/store/db.ts';
import type { CallOutcome } from '../src/stats/call-outcome.ts';
import { startFake } from './fakes/index.ts';
import { adminApi } from './helpers/admin-api.ts';
import { startGateway } from './helpers/gateway.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'calllog-route-master-key-0123456789';
const SPILL = 'spill: local eta 41 s > 10 s';
const tempStore = tempDirs('llmgw-route-');

/** An answered call on `backend` as the proxy reports it, with the scheduler's route. */
function outcome(requestId: string, backend: string, route?: string): CallOutcome {
  return {
    requestId,
    endpoint: 'chat',
    source: 'master',
    userId: null,
    requestedModel: 'm',
    backend,
    model: 'm',
    status: 200,
    reason: null,
    startedAt: Date.now(),
    durationMs: 120,
    ttftMs: 40,
    usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
    ...(route === undefined ? {} : { route }),
  };
}

describe('the route of a call', () => {
  test('reaches the row, the admin API and the console; a call without one has none; survives a restart', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const backends = [{ name: 'cloud', url: fake.url, paid: true }];
    const gw = await startGateway(backends, { api_key: MASTER });
    const api = adminApi(() => gw.url, MASTER);
    gw.gateway.recordOutcome(outcome('with-route', 'cloud', SPILL));
    const answered = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'cloud/m', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(answered.status, 200);
    await answered.text();

    type Listed = { id: number; request_id: string; route: string | null }[];
    const queued = (await api('GET', '/admin/api/calls')).json.data as Listed;
    const spilled = queued.find((r) => r.request_id === 'with-route')!;
    assert.equal(spilled.route, SPILL, 'queued');
    assert.equal(queued.find((r) => r.request_id !== 'with-route')!.route, null, 'a call the scheduler chose plainly');

    const ui = await UiClient.login(gw, MASTER);
    const list = await ui.html('/ui/calls');
    assert.match(list, new RegExp(`<span class="tag route-tag" title="${SPILL.replace('>', '&gt;')}">spill</span>`));
    assert.equal(list.match(/route-tag/g)?.length, 1, 'only the call that has one');
    const detail = await ui.html(`/ui/calls/${spilled.id}`);
    assert.match(detail, /<dt>Why this backend<\/dt><dd class="mono call-route">spill: local eta 41 s &gt; 10 s<\/dd>/);
    const other = queued.find((r) => r.request_id !== 'with-route')!;
    assert.doesNotMatch(await ui.html(`/ui/calls/${other.id}`), /Why this backend/);

    await gw.gateway.callLog.flush();
    assert.equal(gw.gateway.callLog.get(spilled.id)?.route, SPILL, 'on disk');
    await gw.app.close();
    const again = await startGateway(backends, { api_key: MASTER }, { storeDir: gw.storeDir });
    t.after(async () => {
      await again.close();
      await fake.close();
    });
    const reread = (await adminApi(() => again.url, MASTER)('GET', '/admin/api/calls')).json.data as Listed;
    assert.equal(reread.find((r) => r.request_id === 'with-route')!.route, SPILL, 'after a restart');
  });

  test('a stats.db from before gains the column, null on its rows', () => {
    const dir = tempStore();
    const old = openDatabase(
      join(dir, 'stats.db'),
      STATS_MIGRATIONS.filter((m) => m.version <= 3),
    );
    old
      .prepare(
        `INSERT INTO calls (ts, request_id, duration_ms, endpoint, source, backend, status)
      VALUES (1, 'old', 1, '/v1/chat/completions', 's', 'b', 200)`,
      )
      .run();
    old.close();
    const log = CallLog.open(dir, { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 0 });
    try {
      const [row] = log.recent();
      assert.equal(row.request_id, 'old');
      assert.equal(row.route, null);
    } finally {
      log.close();
    }
  });
});
