/**
 * POST /v1/audio/speech end to end with the official `openai` SDK over real sockets: audio
 * bytes identical to what the fake synthesised, content type and length kept, streamed as it
 * comes, the alias's default voice, failover before the first byte, a client leaving or a
 * backend breaking mid-audio, the SSE flavour, errors before the first byte, the call log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { FAKE_DEFAULT_VOICE, speechAudio, startFake, type FakeBackend, type FakeKnobs } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { speechBody } from '../src/surfaces/audio-surface.ts';

const QUIET: Partial<FakeKnobs> = {
  tokensPerSecond: 0,
  chunkCount: 8,
  errorStatus: 0,
  errorCount: 0,
  dropAfterChunks: -1,
  stallAfterChunks: -1,
  audioContentLength: false,
  prefillMs: 0,
};

describe('speech through the gateway', () => {
  let local: FakeBackend;
  let cloud: FakeBackend;
  let gw: TestGateway;
  let client: OpenAI;

  const inflight = (name: string) => gw.gateway.scheduler.snapshot().backends.find((b) => b.name === name)?.inflight;
  const rows = (filter: Parameters<TestGateway['gateway']['callLog']['recent']>[0] = {}) =>
    gw.gateway.callLog.recent(filter).filter((r) => r.endpoint === '/v1/audio/speech');
  const speech = (body: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  before(async () => {
    // llama-swap in front of a Kokoro-like TTS server (free, tried first); Together as the paid fallback
    local = await startFake('llamaswap', { models: ['kokoro'] });
    cloud = await startFake('together', { models: ['kokoro'] });
    gw = await startGateway(
      [
        { name: 'local', url: local.url, max_concurrent: 1 },
        { name: 'cloud', url: cloud.url, paid: true },
      ],
      {
        virtual_models: { speak: 'kokoro', 'speak-local': { local: 'kokoro' } },
        alias_defaults: { speak: { voice: 'af_bella' }, 'speak-local': { voice: 'af_sky' } },
        stream_keepalive_s: 0,
      },
    );
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0, timeout: 10_000 });
  });
  after(async () => {
    await gw?.close();
    await local?.close();
    await cloud?.close();
  });
  const reset = () => {
    local.setKnobs(QUIET);
    cloud.setKnobs(QUIET);
  };

  test('the audio arrives byte for byte, with its content type and the gateway headers', async () => {
    reset();
    const input = 'The quick brown fox jumps over the lazy dog.';
    const { data, response } = await client.audio.speech
      .create({ model: 'speak-local', input, voice: 'alloy' })
      .withResponse();
    const bytes = Buffer.from(await data.arrayBuffer());
    assert.equal(response.headers.get('content-type'), 'audio/mpeg');
    assert.equal(response.headers.get('x-gateway-backend'), 'local');
    assert.ok(response.headers.get('x-request-id'));
    assert.ok(bytes.length > 4096, `several KB (${bytes.length})`);
    assert.ok(bytes.equals(speechAudio(input, 'alloy', 'mp3')), 'the same bytes as the fake sent');
    const sent = local.requests.at(-1)!;
    assert.deepEqual(sent.body, { model: 'kokoro', input, voice: 'alloy' });
    assert.equal(sent.headers.authorization, undefined, "the client's key never reaches a backend");

    const wav = await client.audio.speech.create({
      model: 'local/kokoro',
      input: 'wav please',
      voice: 'alloy',
      response_format: 'wav',
    });
    assert.equal(wav.headers.get('content-type'), 'audio/wav');
    assert.ok(Buffer.from(await wav.arrayBuffer()).equals(speechAudio('wav please', 'alloy', 'wav')));
  });

  test("content-length: the backend's passes through; without one the answer is chunked", async () => {
    reset();
    local.setKnobs({ audioContentLength: true });
    const expected = speechAudio('sized', 'alloy', 'flac');
    const sized = await speech({ model: 'local/kokoro', input: 'sized', voice: 'alloy', response_format: 'flac' });
    assert.equal(sized.status, 200);
    assert.equal(sized.headers.get('content-length'), String(expected.length));
    assert.equal(sized.headers.get('transfer-encoding'), null);
    assert.ok(Buffer.from(await sized.arrayBuffer()).equals(expected));

    local.setKnobs({ audioContentLength: false });
    const chunked = await speech({ model: 'local/kokoro', input: 'sized', voice: 'alloy', response_format: 'flac' });
    assert.equal(chunked.headers.get('content-length'), null);
    assert.equal(chunked.headers.get('transfer-encoding'), 'chunked');
    assert.ok(Buffer.from(await chunked.arrayBuffer()).equals(expected));
  });

  test('streamed: the first bytes reach the client before the backend has finished', async () => {
    reset();
    local.setKnobs({ tokensPerSecond: 20, chunkCount: 10 });
    const input = 'a long sentence, spoken slowly';
    const res = await client.audio.speech.create({ model: 'local/kokoro', input, voice: 'echo' });
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value && first.value.length > 0);
    const upstream = local.requests.at(-1)!;
    assert.equal(upstream.endedAt, undefined, 'the backend is still sending');
    const parts = [Buffer.from(first.value)];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(Buffer.from(value));
    }
    assert.ok(parts.length > 1, 'more than one piece arrived');
    assert.ok(Buffer.concat(parts).equals(speechAudio(input, 'echo')));
  });

  test("the alias's default voice is filled in only when the client sent none", async () => {
    reset();
    const noVoice = { model: 'speak-local', input: 'hi' } as unknown as OpenAI.Audio.SpeechCreateParams;
    const a = Buffer.from(await (await client.audio.speech.create(noVoice)).arrayBuffer());
    assert.equal(local.requests.at(-1)!.body.voice, 'af_sky');
    assert.ok(a.equals(speechAudio('hi', 'af_sky')));

    await (await client.audio.speech.create({ model: 'speak-local', input: 'hi', voice: 'nova' })).arrayBuffer();
    assert.equal(local.requests.at(-1)!.body.voice, 'nova', "the client's voice wins");

    await (await speech({ model: 'speak-local', input: 'hi', voice: null })).arrayBuffer();
    assert.equal(local.requests.at(-1)!.body.voice, 'af_sky', 'a null voice is no voice');

    const pinned = Buffer.from(await (await speech({ model: 'local/kokoro', input: 'hi' })).arrayBuffer());
    assert.equal('voice' in local.requests.at(-1)!.body, false, 'no alias, no default: the body goes as sent');
    assert.ok(pinned.equals(speechAudio('hi', FAKE_DEFAULT_VOICE)));
  });

  test('speechBody: the client bytes as sent but for model and a missing voice', () => {
    const rawBody = '{ "model" : "speak",\n "input":"caf\\u00e9", "speed": 1.0000000000000000001, "voice": null }';
    const body = JSON.parse(rawBody);
    assert.equal(
      speechBody({ path: '', query: '', body, rawBody, defaultVoice: 'af' }, 'kokoro'),
      '{ "model" : "kokoro",\n "input":"caf\\u00e9", "speed": 1.0000000000000000001, "voice": "af" }',
    );
    const withVoice = '{"model":"kokoro","input":"x","voice":"nova"}';
    assert.equal(
      speechBody(
        { path: '', query: '', body: JSON.parse(withVoice), rawBody: withVoice, defaultVoice: 'af' },
        'kokoro',
      ),
      withVoice,
    );
    const none = '{"input":"x","model":"speak"}';
    assert.equal(
      speechBody({ path: '', query: '', body: JSON.parse(none), rawBody: none, defaultVoice: 'af' }, 'kokoro'),
      '{"input":"x","model":"kokoro","voice":"af"}',
    );
  });

  test('failover before the first byte: an error status, or a head and then a dropped connection', async () => {
    reset();
    local.setKnobs({ errorStatus: 503 });
    const input = 'fail over please';
    const { data, response } = await client.audio.speech
      .create({ model: 'speak', input, voice: 'alloy' })
      .withResponse();
    assert.equal(response.headers.get('x-gateway-backend'), 'cloud');
    assert.ok(Buffer.from(await data.arrayBuffer()).equals(speechAudio(input, 'alloy')));
    assert.equal(local.requests.at(-1)!.body.input, input, 'the local backend was tried first');

    reset();
    local.setKnobs({ dropAfterChunks: 0 });
    const before = cloud.requests.length;
    const second = await client.audio.speech.create({ model: 'speak', input, voice: 'alloy' }).withResponse();
    assert.equal(second.response.headers.get('x-gateway-backend'), 'cloud');
    assert.ok(Buffer.from(await second.data.arrayBuffer()).equals(speechAudio(input, 'alloy')));
    assert.equal(cloud.requests.length, before + 1);
    assert.equal(inflight('local'), 0);
    reset();
  });

  test('a client that leaves mid-audio frees the slot and the backend is aborted', async () => {
    reset();
    local.setKnobs({ tokensPerSecond: 20, chunkCount: 50 });
    const ac = new AbortController();
    const res = await client.audio.speech.create(
      { model: 'local/kokoro', input: 'abandoned', voice: 'alloy' },
      { signal: ac.signal },
    );
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    const upstream = local.requests.at(-1)!;
    ac.abort();
    await reader.cancel().catch(() => {});
    await waitFor(() => upstream.endedAt !== undefined, 'the backend request aborted');
    await waitFor(() => inflight('local') === 0, 'the slot released');
    assert.ok(upstream.endedAt! - upstream.startedAt < 2000, 'well before the 2.5 s the whole audio takes');
    await waitFor(() => rows({ status: 499 }).length === 1, 'the 499 row');
    assert.equal(rows({ status: 499 })[0].backend, 'local');

    // the single slot serves the next call at once
    local.setKnobs({ tokensPerSecond: 0, chunkCount: 8 });
    const next = await client.audio.speech.create({ model: 'local/kokoro', input: 'next', voice: 'alloy' });
    assert.ok(Buffer.from(await next.arrayBuffer()).equals(speechAudio('next', 'alloy')));
  });

  for (const contentLength of [false, true]) {
    test(`a backend that breaks mid-audio ends the client's connection, logged 502 (${contentLength ? 'content-length' : 'chunked'})`, async () => {
      reset();
      local.setKnobs({ chunkCount: 10, dropAfterChunks: 3, audioContentLength: contentLength });
      const before = rows({ status: 502 }).length;
      const res = await speech({ model: 'local/kokoro', input: `broken ${contentLength}`, voice: 'alloy' });
      assert.equal(res.status, 200, 'the head went out with the first bytes');
      await assert.rejects(res.arrayBuffer(), 'the body is cut short, never a complete answer');
      await waitFor(() => rows({ status: 502 }).length === before + 1, 'the 502 row');
      const [row] = rows({ status: 502 });
      assert.equal(row.backend, 'local');
      assert.equal(row.reason, 'upstream_failed');
      assert.equal(inflight('local'), 0);
      reset();
    });
  }

  test('stream_format sse: the events are relayed, and their audio is the same', async () => {
    reset();
    const input = 'stream me as events';
    const res = await speech({ model: 'local/kokoro', input, voice: 'alloy', stream_format: 'sse' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(res.headers.get('x-gateway-backend'), 'local');
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => JSON.parse(e.replace(/^data: /, '')));
    const deltas = events.filter((e) => e.type === 'speech.audio.delta');
    assert.equal(deltas.length, 8);
    assert.ok(Buffer.concat(deltas.map((d) => Buffer.from(d.audio, 'base64'))).equals(speechAudio(input, 'alloy')));
    assert.equal(events.at(-1).type, 'speech.audio.done');
    await waitFor(() => rows({ backend: 'local' }).some((r) => r.completion_tokens === 8), 'the sse row with usage');
  });

  test('errors before the first byte are OpenAI-shaped', async () => {
    reset();
    await assert.rejects(
      client.audio.speech.create({ model: 'no-such-voice-model', input: 'x', voice: 'alloy' }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.NotFoundError);
        assert.equal((err.error as { code?: string }).code, 'model_not_found');
        return true;
      },
    );
    const noModel = await speech({ input: 'x', voice: 'alloy' });
    assert.equal(noModel.status, 400);
    assert.equal(((await noModel.json()) as { error: { param: string } }).error.param, 'model');
    const noInput = await speech({ model: 'speak', voice: 'alloy' });
    assert.equal(noInput.status, 400);
    assert.equal(((await noInput.json()) as { error: { param: string } }).error.param, 'input');
    // the backend's own refusal (a format it does not make) is relayed as it was
    await assert.rejects(
      client.audio.speech.create({
        model: 'local/kokoro',
        input: 'x',
        voice: 'alloy',
        response_format: 'xyz' as 'mp3',
      }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError);
        assert.match(err.message, /unsupported response_format/);
        assert.equal(err.headers?.get('x-gateway-backend'), 'local');
        return true;
      },
    );
    await waitFor(
      () => gw.gateway.callLog.recent({ status: 404 }).some((r) => r.requested_model === 'no-such-voice-model'),
      'the refusal row',
    );
    const refused = gw.gateway.callLog.recent({ status: 404 }).find((r) => r.requested_model === 'no-such-voice-model');
    assert.equal(refused?.endpoint, '/v1/audio/speech');
  });

  test('the call log row', async () => {
    reset();
    const res = await client.audio.speech.create({ model: 'speak', input: 'logged', voice: 'alloy' }).withResponse();
    await res.data.arrayBuffer();
    const id = res.response.headers.get('x-request-id');
    await waitFor(() => rows().some((r) => r.request_id === id), 'the row');
    const row = rows().find((r) => r.request_id === id)!;
    assert.equal(row.status, 200);
    assert.equal(row.endpoint, '/v1/audio/speech');
    assert.equal(row.requested_model, 'speak');
    assert.equal(row.model, 'kokoro');
    assert.equal(row.backend, 'local');
    assert.equal(row.reason, null);
    assert.ok(row.ttft_ms !== null && row.ttft_ms <= row.duration_ms);
  });
});

describe('speech deadlines', () => {
  test('a backend that goes silent mid-audio hits the idle deadline: connection ended, 502', async (t) => {
    const tts = await startFake('vllm', { models: ['kokoro'], knobs: { chunkCount: 10, stallAfterChunks: 2 } });
    const gw = await startGateway([{ name: 'tts', url: tts.url }], { stream_idle_timeout_s: 0.3 });
    t.after(async () => {
      await gw.close();
      await tts.close();
    });
    const res = await fetch(`${gw.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'kokoro', input: 'stall', voice: 'a' }),
    });
    assert.equal(res.status, 200);
    await assert.rejects(res.arrayBuffer());
    await waitFor(() => gw.gateway.callLog.recent({ status: 502 }).length === 1, 'the 502 row');
    assert.equal(tts.requests.at(-1)!.endedAt !== undefined, true, 'the backend request was ended');
  });
});
