/**
 * A background create is held to its user's quota like a foreground call: over `quota_req_day`
 * the create itself is a 429 `insufficient_quota`, never `queued` and then failed. A run told
 * `queued` holds its place in the quota until its own call is admitted, so a burst of creates
 * cannot slip past the limit, and the place is not counted twice: the admitted runs complete.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'gw-master-bg-quota-0123';

describe('background runs and the day quota', () => {
  let local: FakeBackend;
  let gw: TestGateway;

  before(async () => {
    local = await startFake('llamacpp', { models: ['qwen3-8b'] });
    gw = await startGateway([{ name: 'local', url: local.url }], {
      api_key: MASTER,
      virtual_models: { r: { local: 'qwen3-8b' } },
    });
  });
  after(async () => {
    await gw?.close();
    await local?.close();
  });

  const userClient = async (name: string) => {
    const created = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name, allow: ['r'], quota_req_day: 2 }),
    });
    assert.equal(created.status, 201);
    const { key } = (await created.json()) as { key: string };
    return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 });
  };
  const outcome = (p: Promise<OpenAI.Responses.Response>) =>
    p.then(
      (r) => r,
      (e: unknown) => e,
    );
  const settled = async (client: OpenAI, ids: string[]) => {
    await waitFor(
      async () => {
        const runs = await Promise.all(ids.map((id) => client.responses.retrieve(id)));
        return runs.every((r) => r.status !== 'queued' && r.status !== 'in_progress');
      },
      'every run ended',
      15_000,
    );
    return Promise.all(ids.map(async (id) => (await client.responses.retrieve(id)).status));
  };

  test('three creates one after another: the third is a 429 insufficient_quota at create', async () => {
    const client = await userClient('bg-seq');
    const first = await client.responses.create({ model: 'r', input: 'one', background: true });
    const second = await client.responses.create({ model: 'r', input: 'two', background: true });
    const third = await outcome(client.responses.create({ model: 'r', input: 'three', background: true }));
    assert.ok(third instanceof OpenAI.APIError, 'the create itself is refused');
    assert.equal(third.status, 429);
    assert.equal(third.code, 'insufficient_quota');
    assert.deepEqual(await settled(client, [first.id, second.id]), ['completed', 'completed']);
  });

  test('a burst of three creates: two are queued and complete, one is refused at create', async () => {
    const client = await userClient('bg-burst');
    local.setKnobs({ latencyMs: 300 });
    try {
      const answers = await Promise.all(
        ['a', 'b', 'c'].map((input) => outcome(client.responses.create({ model: 'r', input, background: true }))),
      );
      const queued = answers.filter((a): a is OpenAI.Responses.Response => !(a instanceof Error));
      const refused = answers.filter((a) => a instanceof OpenAI.APIError);
      assert.equal(queued.length, 2, 'the quota of two, two runs');
      assert.equal(refused.length, 1);
      assert.equal(refused[0]!.status, 429);
      assert.deepEqual(
        await settled(
          client,
          queued.map((r) => r.id),
        ),
        ['completed', 'completed'],
        'a run told queued is not refused by its own reservation',
      );
    } finally {
      local.setKnobs({ latencyMs: 0 });
    }
  });
});
