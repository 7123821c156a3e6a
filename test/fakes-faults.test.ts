/**
 * The fake backends' fault knobs: head then silence, half a body then silence, garbage JSON,
 * N errors then healthy, retry-after.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { ANTHROPIC_FAKE_API_KEY, contentWords, startAnthropicFake, startFake } from './fakes/index.ts';
import { CHAT, chatBody, chunksOf, contentOf, post, streamBody, until, withFake } from './fakes/http-helpers.ts';

describe('fault knobs', () => {
  /** 'silence' when `p` does not settle within 200 ms. */
  const within200 = (p: Promise<unknown>) =>
    Promise.race([
      p.then(
        () => 'settled' as const,
        () => 'error' as const,
      ),
      delay(200).then(() => 'silence' as const),
    ]);

  test('headThenSilence, stream: a text/event-stream head, then nothing until the client goes away', () =>
    withFake('llamacpp', { headThenSilence: true }, async (f) => {
      const ac = new AbortController();
      const res = await post(f, CHAT, streamBody(f), { signal: ac.signal });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/event-stream');
      const next = res.body!.getReader().read();
      assert.equal(await within200(next), 'silence');
      assert.equal(f.inflight, 1);
      assert.deepEqual(f.servedOrder, ['hello']);
      ac.abort();
      await next.catch(() => {});
      await until(() => f.inflight === 0);
      assert.equal(f.inflight, 0);
    }));

  test('headThenSilence, non-stream: an application/json head on the socket, then nothing until close()', async () => {
    const f = await startFake('vllm', { knobs: { headThenSilence: true } });
    const socket = connect(f.port, '127.0.0.1');
    let received = '';
    let ended = false;
    socket.setEncoding('utf8').on('data', (d: string) => {
      received += d;
    });
    socket
      .on('close', () => {
        ended = true;
      })
      .on('error', () => {});
    try {
      const body = JSON.stringify(chatBody(f));
      socket.write(
        `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await until(() => received.includes('\r\n\r\n'));
      const head = received;
      assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(head, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i);
      assert.ok(head.endsWith('\r\n\r\n'), 'the head and no body bytes');
      await delay(200);
      assert.equal(received, head, 'nothing after the head');
      assert.equal(ended, false, 'the socket stays open');
      await f.close();
      await until(() => ended);
      assert.equal(ended, true, 'close() ends it');
    } finally {
      socket.destroy();
      await f.close();
    }
  });

  /**
   * POSTs `body` over a raw socket and waits for the head and some of the body: what arrived,
   * and whether the socket closed since.
   */
  async function rawPost(port: number, path: string, body: unknown, headers: Record<string, string> = {}) {
    const socket = connect(port, '127.0.0.1');
    const seen = { text: '', ended: false };
    socket.setEncoding('utf8').on('data', (d: string) => {
      seen.text += d;
    });
    socket
      .on('close', () => {
        seen.ended = true;
      })
      .on('error', () => {});
    const json = JSON.stringify(body);
    const extra = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}`;
    socket.write(`${head}Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
    await until(() => /\r\n\r\n[\s\S]+/.test(seen.text));
    return { socket, seen };
  }

  /** The half body: the head announces the whole length, half of it came, and nothing more for 200 ms. */
  async function assertHalfThenSilence(seen: { text: string; ended: boolean }, starts: RegExp): Promise<void> {
    const end = seen.text.indexOf('\r\n\r\n');
    const [head, part] = [seen.text.slice(0, end), seen.text.slice(end + 4)];
    assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(head, /\r\ncontent-type: application\/json/i);
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
    assert.match(part, starts);
    assert.ok(part.length > 0 && Buffer.byteLength(part) < length, `${Buffer.byteLength(part)} of ${length} bytes`);
    assert.throws(() => JSON.parse(part), SyntaxError, 'not a whole JSON body');
    await delay(200);
    assert.equal(seen.text, `${head}\r\n\r\n${part}`, 'nothing after the half body');
    assert.equal(seen.ended, false, 'the socket stays open');
  }

  test('halfBodyThenSilence, non-stream: head and half the body, then nothing until the client goes away', async () => {
    const f = await startFake('vllm', { knobs: { halfBodyThenSilence: true } });
    try {
      const cases = [
        [CHAT, chatBody(f), /^\{"id":"chatcmpl-/],
        ['/v1/embeddings', { model: f.models[0], input: 'x' }, /^\{"/],
      ] as const;
      for (const [path, body, starts] of cases) {
        const { socket, seen } = await rawPost(f.port, path, body);
        await assertHalfThenSilence(seen, starts);
        assert.equal(f.inflight, 1, path);
        socket.destroy();
        await until(() => f.inflight === 0);
        assert.equal(f.inflight, 0, `${path}: the answer ends when the client goes away`);
      }
      const { chunks, done } = chunksOf(await (await post(f, CHAT, streamBody(f))).text());
      assert.ok(done);
      assert.equal(contentOf(chunks), contentWords(8).join(''));
    } finally {
      await f.close();
    }
  });

  test('halfBodyThenSilence, Anthropic non-stream: head and half the message, then nothing until close()', async () => {
    const f = await startAnthropicFake({ knobs: { halfBodyThenSilence: true } });
    const body = { model: f.models[0], max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] };
    const headers = { 'x-api-key': ANTHROPIC_FAKE_API_KEY, 'anthropic-version': '2023-06-01' };
    const { socket, seen } = await rawPost(f.port, '/v1/messages', body, headers);
    try {
      await assertHalfThenSilence(seen, /^\{"id":"msg_/);
      await f.close();
      await until(() => seen.ended);
      assert.equal(seen.ended, true, 'close() ends it');
    } finally {
      socket.destroy();
      await f.close();
    }
  });

  test('headThenSilence: errorStatus answers first', () =>
    withFake('ollama', { headThenSilence: true, errorStatus: 503 }, async (f) => {
      const res = await post(f, CHAT, chatBody(f));
      assert.equal(res.status, 503);
      await res.arrayBuffer();
    }));

  test('garbageJson: non-stream 200 application/json whose body does not parse; streams unaffected', () =>
    withFake('together', { garbageJson: true }, async (f) => {
      for (const [path, body] of [
        [CHAT, chatBody(f)],
        ['/v1/completions', { model: f.models[0], prompt: 'x' }],
        ['/v1/embeddings', { model: f.models[0], input: 'x' }],
      ] as const) {
        const res = await post(f, path, body);
        assert.equal(res.status, 200, path);
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
        const text = await res.text();
        assert.match(text, /^\{"/, path);
        assert.throws(() => JSON.parse(text), SyntaxError, path);
      }
      const { chunks, done } = chunksOf(await (await post(f, CHAT, streamBody(f))).text());
      assert.ok(done);
      assert.equal(contentOf(chunks), contentWords(8).join(''));
    }));

  test('errorCount: 500 × 3, then healthy; setKnobs starts a new count', () =>
    withFake('vllm', { errorStatus: 500, errorCount: 3 }, async (f) => {
      const statuses = async (n: number) => {
        const out: number[] = [];
        for (let i = 0; i < n; i++) {
          const res = await post(f, CHAT, chatBody(f));
          await res.arrayBuffer();
          out.push(res.status);
          assert.equal((await fetch(`${f.url}/v1/models`)).status, 200, 'model lists neither fail nor count');
        }
        return out;
      };
      assert.deepEqual(await statuses(5), [500, 500, 500, 200, 200]);
      f.setKnobs({ errorCount: 1 });
      assert.deepEqual(await statuses(2), [500, 200]);
      f.setKnobs({ errorCount: 0 });
      assert.deepEqual(await statuses(2), [500, 500], '0 = every request');
    }));

  test('retryAfter adds a retry-after header to the errorStatus answer only', () =>
    withFake('openrouter', { errorStatus: 429, retryAfter: '7', errorCount: 1 }, async (f) => {
      const limited = await post(f, CHAT, chatBody(f));
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('retry-after'), '7');
      assert.equal(((await limited.json()) as any).error.code, 429);
      const ok = await post(f, CHAT, chatBody(f));
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('retry-after'), null);
      await ok.arrayBuffer();
      f.setKnobs({ errorStatus: 503, errorBody: 'overloaded', retryAfter: '120' });
      const text = await post(f, CHAT, chatBody(f));
      assert.equal(text.headers.get('retry-after'), '120');
      assert.equal(await text.text(), 'overloaded');
      f.setKnobs({ retryAfter: undefined, errorCount: 0 });
      const plain = await post(f, CHAT, chatBody(f));
      assert.equal(plain.status, 503);
      assert.equal(plain.headers.get('retry-after'), null);
      await plain.arrayBuffer();
    }));
});
