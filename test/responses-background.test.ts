/**
 * Background Responses: cancel while parked and while running (slot freed, upstream aborted,
 * status cancelled and kept), a long park beyond the alias's, a restart failing what was
 * unfinished, the TTL, and the first terminal status winning.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { FakeBackend } from './fakes/index.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { startBackgroundRig, type BackgroundRig } from './helpers/background-rig.ts';
import { openStore } from '../src/store/db.ts';
import { ResponsesRepo, type StoredResponse } from '../src/store/responses-repo.ts';

const MASTER = 'gw-master-background';

describe('background responses', () => {
  let local: FakeBackend;
  let gw: TestGateway;
  let client: OpenAI;

  let rig: BackgroundRig | undefined;

  before(async () => {
    rig = await startBackgroundRig(MASTER);
    ({ local, gw, client } = rig);
  });
  after(async () => rig?.close());

  const holdTheSlot = () => {
    local.setKnobs({ tokensPerSecond: 10, chunkCount: 30 });
    return client.chat.completions.create({ model: 'r', messages: [{ role: 'user', content: 'hog' }] });
  };
  const slotsFree = () =>
    gw.gateway.scheduler.snapshot().backends.every((b) => b.inflight === 0) &&
    gw.gateway.scheduler.snapshot().parked.length === 0;

  test('parks past the alias park time, and a cancel while parked leaves the queue', async () => {
    const hog = holdTheSlot();
    await waitFor(() => local.inflight === 1, 'the slot is taken');
    const queued = await client.responses.create({ model: 'r', input: 'wait', background: true });
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'parked');
    await new Promise((r) => setTimeout(r, 400)); // longer than park_timeout_s
    assert.equal(
      (await client.responses.retrieve(queued.id)).status,
      'queued',
      'still waiting: async_park_timeout_s applies',
    );
    const cancelled = await client.responses.cancel(queued.id);
    assert.equal(cancelled.status, 'cancelled');
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 0, 'out of the queue');
    await hog;
    local.setKnobs({ tokensPerSecond: 0, chunkCount: 8 });
    await waitFor(slotsFree, 'everything free');
    assert.equal((await client.responses.retrieve(queued.id)).status, 'cancelled');
  });

  test('a cancel while running aborts upstream and frees the slot; the status stays cancelled', async () => {
    local.setKnobs({ tokensPerSecond: 10, chunkCount: 50 });
    try {
      const started = await client.responses.create({ model: 'r', input: 'long', background: true });
      await waitFor(async () => (await client.responses.retrieve(started.id)).status === 'in_progress', 'in progress');
      assert.equal(local.inflight, 1);
      const cancelled = await client.responses.cancel(started.id);
      assert.equal(cancelled.status, 'cancelled');
      await waitFor(() => local.inflight === 0, 'upstream aborted');
      await waitFor(slotsFree, 'slot freed');
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(
        (await client.responses.retrieve(started.id)).status,
        'cancelled',
        'the first terminal status stays',
      );
    } finally {
      local.setKnobs({ tokensPerSecond: 0, chunkCount: 8 });
    }
  });

  test('a background call the fleet refuses ends failed with the reason', async () => {
    local.setKnobs({ errorStatus: 500 });
    try {
      const queued = await client.responses.create({ model: 'r', input: 'x', background: true });
      let final = queued;
      await waitFor(
        async () => ['failed', 'completed'].includes((final = await client.responses.retrieve(queued.id)).status ?? ''),
        'finished',
      );
      assert.equal(final.status, 'failed');
      assert.ok(final.error?.message);
    } finally {
      local.setKnobs({ errorStatus: 0 });
    }
  });

  test('DELETE removes it; the id is then unknown', async () => {
    const queued = await client.responses.create({ model: 'r', input: 'bye', background: true });
    await waitFor(async () => (await client.responses.retrieve(queued.id)).status === 'completed', 'completed');
    await client.responses.delete(queued.id);
    await assert.rejects(client.responses.retrieve(queued.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });
});

describe('the responses store', () => {
  const row = (id: string, status: StoredResponse['status'], expiresAt = Date.now() + 60_000): StoredResponse => ({
    id,
    owner: 'master',
    status,
    background: true,
    response: { id, status },
    history: [],
    events: null,
    createdAt: 1,
    expiresAt,
  });

  test('the first terminal status wins; expired rows are gone; a restart fails what was unfinished', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llmgw-resp-'));
    try {
      const db = openStore(dir);
      const repo = new ResponsesRepo(db);
      const now = Date.now();
      repo.insert(row('resp_a', 'in_progress'), now);
      assert.equal(repo.update('resp_a', 'cancelled', { status: 'cancelled' }, [], null, now), true);
      assert.equal(repo.update('resp_a', 'completed', { status: 'completed' }, [], null, now), false);
      assert.equal(repo.get('resp_a', now)?.status, 'cancelled');
      repo.insert(row('resp_old', 'completed', now - 1), now);
      assert.equal(repo.get('resp_old', now), undefined, 'expired rows are not served');
      assert.equal(repo.purgeExpired(now), 1);
      repo.insert(row('resp_b', 'queued'), now);
      db.close();
      const reopened = new ResponsesRepo(openStore(dir));
      assert.equal(reopened.failUnfinished(now), 1);
      const b = reopened.get('resp_b', now)!;
      assert.equal(b.status, 'failed');
      assert.match(String((b.response.error as { message: string }).message), /stopped/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
