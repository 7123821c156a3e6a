/**
 * Responses that a `responses: native` backend stores itself, through the gateway with the
 * official `openai` SDK: retrieve, input items, delete and `previous_response_id` chains of the
 * backend's id go to the backend that made it, for its owner only, and still after a restart.
 * A background run on a native backend has one id everywhere: its replayed and live events
 * carry the id create and polling answer with.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startNativeResponsesFake, type NativeResponsesFake } from './fakes/responses-native.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'gw-master-native-store';
const KEY = 'sk-native-backend-0123456789';

describe('native Responses read back through the gateway', () => {
  let first: NativeResponsesFake;
  let second: NativeResponsesFake;
  let gw: TestGateway;
  let client: OpenAI;
  const storeDir = mkdtempSync(join(tmpdir(), 'llmgw-native-'));
  const start = async () => {
    gw = await startGateway(
      [
        { name: 'one', url: first.url, responses: 'native', api_key: KEY },
        { name: 'two', url: second.url, responses: 'native', api_key: KEY },
      ],
      {
        api_key: MASTER,
        virtual_models: {
          both: { one: 'gpt-5.2', two: 'gpt-5.2' },
          only2: { two: 'gpt-5.2' },
          only1: { one: 'gpt-5.2' },
        },
      },
      { storeDir },
    );
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0, timeout: 10_000 });
  };

  before(async () => {
    first = await startNativeResponsesFake({ apiKey: KEY });
    second = await startNativeResponsesFake({ apiKey: KEY });
    await start();
  });
  after(async () => {
    await gw?.close();
    await first?.close();
    await second?.close();
    rmSync(storeDir, { recursive: true, force: true });
  });

  const userKey = async (name: string) => {
    const res = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    assert.equal(res.status, 201);
    return ((await res.json()) as { key: string }).key;
  };

  test('retrieve and input items of a stored response come from the backend that made it', async () => {
    const made = await client.responses.create({ model: 'only2', input: 'hello there' });
    assert.ok(second.stored.has(made.id), 'the backend stored it under the id the client got');
    const { output_text: text, ...got } = await client.responses.retrieve(made.id);
    assert.deepEqual(got, second.stored.get(made.id)!.response, "the backend's own object");
    assert.equal(text, 'seen 1 items');
    const items = await client.responses.inputItems.list(made.id);
    assert.deepEqual(
      items.data.map((i) => i.id),
      second.stored.get(made.id)!.input.map((i) => i.id),
    );
    assert.equal(items.data[0]!.type, 'message');
    const read = second.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/responses/'));
    assert.equal(read.length, 2);
    assert.equal(read[0]!.headers.authorization, `Bearer ${KEY}`, "the backend's credential, not the client's");
    assert.equal(first.requests.filter((r) => r.path.startsWith('/v1/responses/')).length, 0);
  });

  test('a streamed create is remembered under the id its events carry', async () => {
    const stream = await client.responses.create({ model: 'only1', input: 'stream me', stream: true });
    let id: string | undefined;
    for await (const event of stream) if (event.type === 'response.completed') id = event.response.id;
    assert.ok(id && first.stored.has(id));
    assert.equal((await client.responses.retrieve(id)).id, id);
  });

  test('previous_response_id of a native id goes to the backend that holds the conversation', async () => {
    const opening = await client.responses.create({ model: 'only2', input: 'my name is Ada' });
    let previous = opening.id;
    for (let turn = 0; turn < 4; turn++) {
      const next = await client.responses.create({
        model: 'both',
        input: `turn ${turn}`,
        previous_response_id: previous,
      });
      assert.ok(second.stored.has(next.id), `turn ${turn} went to the backend holding the chain`);
      assert.equal(next.output_text, `seen ${3 + 2 * turn} items`, 'the backend saw the whole conversation');
      previous = next.id;
    }
    const other = await client.responses.create({ model: 'only1', input: 'x', previous_response_id: previous }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(other instanceof OpenAI.BadRequestError, 'a model the holding backend does not serve');
    assert.equal(other.code, 'previous_response_not_found');
  });

  test("another caller gets the 404 of an unknown id; the owner's stays readable after a restart", async () => {
    const made = await client.responses.create({ model: 'only1', input: 'mine' });
    const stranger = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await userKey('stranger'), maxRetries: 0 });
    const reads = [
      () => stranger.responses.retrieve(made.id),
      () => stranger.responses.inputItems.list(made.id),
      () => stranger.responses.delete(made.id),
    ];
    for (const read of reads) {
      const error = await read().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof OpenAI.NotFoundError);
    }
    assert.ok(first.stored.has(made.id), 'the stranger deleted nothing');
    await gw.close();
    await start();
    assert.equal((await client.responses.retrieve(made.id)).id, made.id);
  });

  test('delete goes to the backend, and the id is gone afterwards', async () => {
    const made = await client.responses.create({ model: 'only1', input: 'delete me' });
    const deleted = await client.responses.delete(made.id).then(() => 'ok');
    assert.equal(deleted, 'ok');
    assert.equal(first.stored.has(made.id), false);
    const after = await client.responses.retrieve(made.id).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(after instanceof OpenAI.NotFoundError);
  });

  test('store: false is not remembered (nothing to read back)', async () => {
    const made = await client.responses.create({ model: 'only1', input: 'forget me', store: false });
    const reads = first.requests.length;
    const error = await client.responses.retrieve(made.id).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof OpenAI.NotFoundError);
    assert.equal(first.requests.length, reads, 'answered by the gateway, no backend asked');
  });

  test('a background run on a native backend carries one id in create, polling and every event', async () => {
    first.setEventDelay(5);
    try {
      const queued = await client.responses.create({ model: 'only1', input: 'run in the back', background: true });
      await waitFor(async () => (await client.responses.retrieve(queued.id)).status === 'completed', 'finished');
      const replay = await client.responses.retrieve(queued.id, { stream: true });
      const ids: string[] = [];
      for await (const event of replay) if ('response' in event) ids.push(event.response.id);
      assert.ok(ids.length >= 3, 'created, in_progress and completed');
      assert.deepEqual(new Set(ids), new Set([queued.id]));
      const live = await client.responses.create({
        model: 'only1',
        input: 'follow me',
        background: true,
        stream: true,
      });
      const liveIds: string[] = [];
      for await (const event of live) if ('response' in event) liveIds.push(event.response.id);
      const polled = await client.responses.retrieve(liveIds[0]!);
      assert.equal(polled.id, liveIds[0]);
      assert.deepEqual(new Set(liveIds), new Set([polled.id]));
    } finally {
      first.setEventDelay(0);
    }
  });
});
