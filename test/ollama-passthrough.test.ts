/**
 * The gateway's Ollama API in front of a real-behaving Ollama server (`type: ollama`, the fake
 * of test/fakes/ollama-server.ts): calls pass through byte for byte both ways, stream and not;
 * an Open WebUI-shaped session with plain fetch; the root probe; model management refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ollama } from 'ollama';
import { startOllamaFake, type OllamaFake } from './fakes/ollama-server.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const KEY = 'gw-master-key-passthrough';
const auth = { authorization: `Bearer ${KEY}` };

describe('Ollama clients onto an Ollama server, through the gateway', () => {
  let box: OllamaFake;
  let gw: TestGateway;
  let client: Ollama;
  const lastPost = () => box.requests.filter((r) => r.method === 'POST').at(-1)!;

  before(async () => {
    box = await startOllamaFake();
    gw = await startGateway([{ name: 'box', url: box.url, type: 'ollama', local: true }], { api_key: KEY });
    client = new Ollama({ host: gw.url, headers: { Authorization: `Bearer ${KEY}` } });
  });
  after(async () => {
    await gw?.close();
    await box?.close();
  });

  test("a whole answer: the client's bytes up, the server's bytes down", async () => {
    const text =
      '{"model":"llama3.2:latest",  "messages":[{"role":"user","content":"hi \\u00e9"}],"stream":false,' +
      '"options":{"num_ctx":8192,"seed":1e3},"keep_alive":"10m"}';
    const res = await fetch(`${gw.url}/api/chat`, { method: 'POST', headers: auth, body: text });
    const got = await res.text();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'box');
    assert.equal(lastPost().path, '/api/chat');
    assert.equal(lastPost().raw, text, 'every byte as the client sent it');
    assert.equal(lastPost().headers.authorization, undefined, "the gateway's key stays here");
    assert.equal(got, lastPost().sent, 'every byte as the server answered');
  });

  test('a pinned model: only `model` is edited', async () => {
    const text = '{"model":"box/llama3.2:latest","prompt":"why?","stream":false,"raw":true}';
    const res = await fetch(`${gw.url}/api/generate`, { method: 'POST', headers: auth, body: text });
    assert.equal(await res.text(), lastPost().sent);
    assert.equal(lastPost().raw, '{"model":"llama3.2:latest","prompt":"why?","stream":false,"raw":true}');
  });

  test('a stream: NDJSON relayed line by line, byte for byte, judged by the client', async () => {
    const res = await fetch(`${gw.url}/api/chat`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama3.2:latest', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const got = await res.text();
    assert.equal(got, lastPost().sent);
    assert.ok(got.split('\n').filter(Boolean).length >= 3);

    const stream = await client.generate({ model: 'llama3.2:latest', prompt: 'hi', stream: true });
    let text = '';
    let last;
    for await (const part of stream) {
      text += part.response;
      last = part;
    }
    assert.equal(text, 'tok0 tok1 tok2 tok3 tok4');
    assert.equal(last!.done, true);
    assert.ok(last!.eval_count > 0);
  });

  test('embed and show pass through', async () => {
    const embedded = await client.embed({ model: 'all-minilm:latest', input: ['a', 'b'] });
    assert.equal(embedded.embeddings.length, 2);
    assert.equal(JSON.stringify(embedded), lastPost().sent);
    const old = await client.embeddings({ model: 'all-minilm:latest', prompt: 'a' });
    assert.deepEqual(old.embedding, embedded.embeddings[0]);
  });

  test('an Open WebUI-shaped session: version, tags, then a streamed chat with fetch', async () => {
    const version = await fetch(`${gw.url}/api/version`, { headers: auth });
    assert.equal(version.status, 200);
    assert.ok(((await version.json()) as { version: string }).version);
    const tags = (await (await fetch(`${gw.url}/api/tags`, { headers: auth })).json()) as { models: any[] };
    const names = tags.models.map((m) => m.name);
    assert.ok(names.includes('llama3.2:latest') && names.includes('box/llama3.2:latest'), names.join(', '));
    const res = await fetch(`${gw.url}/api/chat`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: names[0],
        messages: [{ role: 'user', content: 'hello' }],
        stream: true,
        options: { temperature: 0.8 },
        keep_alive: '5m',
      }),
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    const objects: any[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) if (line.trim()) objects.push(JSON.parse(line));
    }
    assert.equal(buffer, '');
    assert.ok(objects.length >= 2);
    assert.ok(objects.slice(0, -1).every((o) => o.done === false && typeof o.message.content === 'string'));
    assert.equal(objects.at(-1).done, true);
  });

  test("a user's allow-list: /api/tags is its /v1/models, a model outside it looks unknown", async () => {
    const made = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'limited', allow: ['box/llama3.2:latest'] }),
    });
    assert.equal(made.status, 201);
    const { key } = (await made.json()) as { key: string };
    const limited = { authorization: `Bearer ${key}` };
    const tags = (await (await fetch(`${gw.url}/api/tags`, { headers: limited })).json()) as { models: any[] };
    const v1 = (await (await fetch(`${gw.url}/v1/models`, { headers: limited })).json()) as { data: any[] };
    assert.deepEqual(tags.models.map((m) => m.name).sort(), v1.data.map((m) => m.id).sort());
    assert.ok(tags.models.length > 0 && tags.models.length < 6, tags.models.map((m) => m.name).join(', '));
    const ask = (model: string) =>
      fetch(`${gw.url}/api/chat`, {
        method: 'POST',
        headers: limited,
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }], stream: false }),
      });
    const forbidden = await ask('qwen3:8b');
    const unknown = await ask('no-such-model');
    assert.deepEqual([forbidden.status, unknown.status], [404, 404]);
    const words = (r: any) => r.error.replace(/"[^"]*"/, '"…"');
    assert.equal(words(await forbidden.json()), words(await unknown.json()));
    assert.equal((await ask('box/llama3.2:latest')).status, 200);
  });

  test('GET and HEAD / answer like Ollama, without a key', async () => {
    const get = await fetch(`${gw.url}/`);
    assert.equal(get.status, 200);
    assert.equal(await get.text(), 'Ollama is running');
    const head = await fetch(`${gw.url}/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
  });

  test("pull, push, create, copy and delete: refused in Ollama's shape, never a 404 page", async () => {
    const calls: [string, () => Promise<unknown>][] = [
      ['pull', () => client.pull({ model: 'llama3.2' })],
      ['push', () => client.push({ model: 'me/llama3.2' })],
      ['create', () => client.create({ model: 'mine', from: 'llama3.2' })],
      ['copy', () => client.copy({ source: 'llama3.2', destination: 'backup' })],
      ['delete', () => client.delete({ model: 'llama3.2' })],
    ];
    for (const [name, call] of calls) {
      await assert.rejects(call, (err: any) => {
        assert.equal(err.name, 'ResponseError', name);
        assert.equal(err.status_code, 403, name);
        assert.match(err.error, /does not manage models/, name);
        return true;
      });
    }
    const raw = await fetch(`${gw.url}/api/pull`, { method: 'POST', headers: auth, body: '{"model":"x"}' });
    assert.deepEqual(Object.keys((await raw.json()) as object), ['error']);
    assert.equal(box.requests.filter((r) => /pull|push|create|copy|delete/.test(r.path)).length, 0);
  });

  test('bad input gets Ollama-shaped errors with the right status', async () => {
    const ask = async (body: string, headers: Record<string, string> = auth) => {
      const res = await fetch(`${gw.url}/api/chat`, { method: 'POST', headers, body });
      const json = (await res.json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(json), ['error'], JSON.stringify(json));
      return { status: res.status, error: json.error as string };
    };
    assert.equal((await ask('not json')).status, 400);
    assert.equal((await ask('{"messages":[]}')).status, 400);
    const unknown = await ask('{"model":"nope","messages":[{"role":"user","content":"x"}]}');
    assert.equal(unknown.status, 404);
    assert.match(unknown.error, /^model "nope" not found/);
    assert.equal((await ask('{"model":"llama3.2:latest"}', {})).status, 401);
    assert.equal((await ask('{"model":"llama3.2:latest"}', { authorization: 'Bearer wrong' })).status, 401);
    await assert.rejects(client.chat({ model: 'nope', messages: [] }), (err: any) => err.status_code === 404);
    const route = await fetch(`${gw.url}/api/nothing-here`, { headers: auth });
    assert.equal(route.status, 404);
    assert.deepEqual(Object.keys((await route.json()) as object), ['error']);
  });

  test('a request that only loads the model is answered at once', async () => {
    const before = box.requests.length;
    const res = await client.generate({ model: 'llama3.2:latest', prompt: '' });
    assert.equal(res.done, true);
    assert.equal(res.done_reason, 'load');
    const chat = await fetch(`${gw.url}/api/chat`, {
      method: 'POST',
      headers: auth,
      body: '{"model":"llama3.2:latest","messages":[],"keep_alive":0}',
    });
    assert.equal(((await chat.json()) as { done_reason: string }).done_reason, 'unload');
    assert.equal(box.requests.length, before);
  });
});
