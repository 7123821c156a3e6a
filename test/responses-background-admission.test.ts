/**
 * A background run is admitted before it is told `queued`: past `max_parked` the create itself
 * is refused with 503 `queue_full` and a Retry-After (the openai SDK's own retry reads it),
 * instead of answering `queued` and failing the run at once. What was told `queued` runs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { request } from 'undici';
import type { FakeBackend } from './fakes/index.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { startBackgroundRig, type BackgroundRig } from './helpers/background-rig.ts';

const MASTER = 'gw-master-admission';

describe('background runs past max_parked', () => {
  let local: FakeBackend;
  let gw: TestGateway;
  let client: OpenAI;

  let rig: BackgroundRig | undefined;

  before(async () => {
    rig = await startBackgroundRig(MASTER, { max_parked: 1 });
    ({ local, gw, client } = rig);
  });
  after(async () => rig?.close());

  const parked = () => gw.gateway.scheduler.snapshot().parked.length;
  /** Takes the one slot until the returned function lets it go (a slow answer, abandoned). */
  const holdTheSlot = async () => {
    local.setKnobs({ tokensPerSecond: 2, chunkCount: 200 });
    const abort = new AbortController();
    const hog = client.chat.completions
      .create({ model: 'r', messages: [{ role: 'user', content: 'hog' }] }, { signal: abort.signal })
      .catch(() => undefined);
    await waitFor(() => local.inflight === 1, 'the slot is taken');
    local.setKnobs({ tokensPerSecond: 0, chunkCount: 8 });
    return async () => {
      abort.abort();
      await hog;
    };
  };
  const refusalOf = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e,
    );
  const settle = async (ids: string[]) => {
    await waitFor(
      async () => {
        const statuses = await Promise.all(ids.map(async (id) => (await client.responses.retrieve(id)).status));
        return statuses.every((s) => s === 'completed' || s === 'failed' || s === 'cancelled');
      },
      'every run ended',
      15_000,
    );
  };

  test('the create past the last place is refused with 503 + Retry-After; the one told queued runs', async () => {
    const release = await holdTheSlot();
    const queued = await client.responses.create({ model: 'r', input: 'first in line', background: true });
    assert.equal(queued.status, 'queued');
    await waitFor(() => parked() === 1, 'it parked', 10_000);
    const refused = await refusalOf(client.responses.create({ model: 'r', input: 'one too many', background: true }));
    assert.ok(refused instanceof OpenAI.APIError, 'the create itself fails');
    assert.equal(refused.status, 503);
    assert.equal(refused.code, 'queue_full');
    assert.equal(refused.headers?.get('retry-after'), '2');
    await release();
    await settle([queued.id]);
    assert.equal((await client.responses.retrieve(queued.id)).status, 'completed');
  });

  test('a burst of creates for one last place: one is queued and runs, the rest are refused at once', async () => {
    const release = await holdTheSlot();
    const answers = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        client.responses.create({ model: 'r', input: `burst ${i}`, background: true }).then(
          (r) => r,
          (e: unknown) => e,
        ),
      ),
    );
    const admitted = answers.filter((a): a is OpenAI.Responses.Response => !(a instanceof Error));
    const refused = answers.filter((a) => a instanceof OpenAI.APIError);
    assert.equal(admitted.length, 1, 'one place, one admitted');
    assert.equal(refused.length, 3);
    for (const r of refused) assert.equal(r.status, 503);
    await release();
    await settle(admitted.map((r) => r.id));
    assert.equal((await client.responses.retrieve(admitted[0]!.id)).status, 'completed', 'what was told queued ran');
  });
  test('a foreground call between a create and its run reaching the scheduler does not take its place', async () => {
    const release = await holdTheSlot();
    const headers = { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' };
    const post = (path: string, body: unknown) =>
      request(`${gw.url}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
    // the create is on its way; the foreground call follows at once, before the run's own call arrives
    const create = post('/v1/responses', { model: 'r', input: 'promised a place', background: true });
    await new Promise((r) => setImmediate(r));
    const foreground = post('/v1/chat/completions', { model: 'r', messages: [{ role: 'user', content: 'me first' }] });
    const created = await create;
    const queued = (await created.body.json()) as { id: string; status: string };
    assert.equal(created.statusCode, 200);
    assert.equal(queued.status, 'queued');
    const late = await foreground;
    const refused = (await late.body.json()) as { error: { code: string } };
    assert.equal(late.statusCode, 503, 'the one place was promised to the run');
    assert.equal(refused.error.code, 'queue_full');
    await release();
    await settle([queued.id]);
    const run = await client.responses.retrieve(queued.id);
    assert.equal(run.status, 'completed', `told queued, it ran (${JSON.stringify(run.error)})`);
  });
});
