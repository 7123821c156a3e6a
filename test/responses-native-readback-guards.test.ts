/**
 * Reads of a native backend's stored response, as an attacker and a changing config would try
 * them: the backend's URL is built from the checked id, never from the client's raw path (an
 * encoded letter, a trailing slash, `..` or an encoded slash never reach it); a backend's id
 * that is not a plain id is never remembered; an expired or deleted mapping is the gateway's
 * own 404 without asking the backend; a backend gone from the config is a clear 404, not a 500.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startNativeResponsesFake, type NativeResponsesFake } from './fakes/responses-native.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'gw-master-native-guards';
const KEY = 'sk-native-guards-0123456789';

/** A GET with the path exactly as given (fetch would normalise `..` and slashes). */
const rawGet = (base: string, path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const { hostname, port } = new URL(base);
    const req = request({ host: hostname, port, path, headers: { authorization: `Bearer ${MASTER}` } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });

describe('native read-back: ids, paths, expiry and config changes', () => {
  let fake: NativeResponsesFake;
  let other: NativeResponsesFake;
  let gw: TestGateway;
  let client: OpenAI;
  const storeDir = mkdtempSync(join(tmpdir(), 'llmgw-native-guards-'));
  const start = async (backends: string[], ttlH = 24) => {
    const all = { one: fake.url, two: other.url };
    gw = await startGateway(
      backends.map((name) => ({ name, url: all[name as 'one' | 'two'], responses: 'native' as const, api_key: KEY })),
      { api_key: MASTER, responses_ttl_h: ttlH, virtual_models: { m: { one: 'gpt-5.2' } } },
      { storeDir },
    );
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0, timeout: 10_000 });
  };
  const backendReads = (f: NativeResponsesFake, from: number) =>
    f.requests.slice(from).filter((r) => r.path.startsWith('/v1/responses/'));

  before(async () => {
    fake = await startNativeResponsesFake({ apiKey: KEY });
    other = await startNativeResponsesFake({ apiKey: KEY });
    await start(['one', 'two']);
  });
  after(async () => {
    await gw?.close();
    await fake?.close();
    await other?.close();
    rmSync(storeDir, { recursive: true, force: true });
  });

  test("the backend's path is built from the id, whatever the client's raw path was", async () => {
    const { id } = await client.responses.create({ model: 'm', input: 'hi' });
    const variants = [
      `/v1/responses/%72${id.slice(1)}`,
      `/v1/responses/${id}/`,
      `/v1//responses/${id}`,
      `/v1/responses/${id}?stream=false&x=%2F..%2F..%2Fmodels`,
    ];
    for (const path of variants) {
      const from = fake.requests.length;
      const { status } = await rawGet(gw.url, path);
      assert.equal(status, 200, path);
      const seen = backendReads(fake, from);
      assert.equal(seen.length, 1, path);
      assert.equal(seen[0]!.path, `/v1/responses/${id}`, `${path}: the canonical path`);
    }
    const from = fake.requests.length;
    const { status } = await rawGet(gw.url, `/v1/responses/${id}/input_items?limit=1`);
    assert.equal(status, 200);
    const seen = backendReads(fake, from).map((r) => [r.path, r.query]);
    assert.deepEqual(seen, [[`/v1/responses/${id}/input_items`, 'limit=1']]);
  });

  test('an id with a slash or dots is a 404 before any lookup, and never reaches a backend', async () => {
    const from = fake.requests.length;
    for (const path of ['/v1/responses/..%2F..%2Fv1%2Fmodels', '/v1/responses/..', '/v1/responses/resp_a%2F..%2Fb']) {
      const { status, body } = await rawGet(gw.url, path);
      assert.equal(status, 404, path);
      assert.equal(JSON.parse(body).error.code, 'not_found', path);
    }
    assert.equal(fake.requests.length, from, 'no backend asked');
  });

  test("a backend's id that is not a plain id is not remembered (nor read back through it)", async () => {
    const odd = 'resp_evil/../../v1/models';
    fake.setNextId(odd);
    const made = await client.responses.create({ model: 'm', input: 'odd id' });
    assert.equal(made.id, odd, 'the client got what the backend said');
    assert.equal(gw.gateway.responses.nativeOrigin(odd, Date.now()), undefined, 'not remembered');
    const from = fake.requests.length;
    const { status } = await rawGet(gw.url, `/v1/responses/${encodeURIComponent(odd)}`);
    assert.equal(status, 404);
    assert.equal(fake.requests.length, from, 'no backend asked');
  });

  test("another user's native id as previous_response_id: the unknown id's 400, not sent on", async () => {
    const { id } = await client.responses.create({ model: 'm', input: 'my secret context' });
    const made = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'chainer' }),
    });
    const { key } = (await made.json()) as { key: string };
    const stranger = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    const from = fake.requests.length;
    const theirs = await stranger.responses.create({ model: 'm', input: 'go on', previous_response_id: id }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(theirs instanceof OpenAI.BadRequestError, String(theirs));
    assert.equal(theirs.code, 'previous_response_not_found');
    assert.equal(
      fake.requests.slice(from).some((r) => r.body?.previous_response_id === id),
      false,
      'not passed on',
    );
    const mine = await client.responses.create({ model: 'm', input: 'go on', previous_response_id: id });
    assert.equal(mine.previous_response_id, id, 'the owner continues it');
  });

  test("after DELETE the mapping is gone: a read is the gateway's own 404", async () => {
    const { id } = await client.responses.create({ model: 'm', input: 'delete me' });
    await client.responses.delete(id);
    const from = fake.requests.length;
    const error = await client.responses.retrieve(id).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof OpenAI.NotFoundError);
    assert.equal(fake.requests.length, from, 'no backend asked');
  });

  test('a backend removed from the config: a clear 404, not a 500', async () => {
    await gw.close();
    await start(['two', 'one']);
    const made = await new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: MASTER, maxRetries: 0 }).responses.create({
      model: 'two/gpt-5.2',
      input: 'on two',
    });
    await gw.close();
    await start(['one']);
    const error = await client.responses.retrieve(made.id).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof OpenAI.NotFoundError, String(error));
    assert.match(error.message, /no longer configured/);
  });

  test('past responses_ttl_h the mapping is expired: the 404 of an unknown id, no backend asked', async () => {
    await gw.close();
    await start(['one'], 1 / 3600); // one second
    const { id } = await client.responses.create({ model: 'm', input: 'short-lived' });
    assert.equal((await client.responses.retrieve(id)).id, id, 'readable at first');
    await new Promise((r) => setTimeout(r, 1100));
    const from = fake.requests.length;
    const error = await client.responses.retrieve(id).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof OpenAI.NotFoundError);
    assert.equal(error.message, `404 Response with id '${id}' not found.`);
    assert.equal(fake.requests.length, from, 'no backend asked');
  });
});
