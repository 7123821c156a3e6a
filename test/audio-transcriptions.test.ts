/**
 * POST /v1/audio/transcriptions and /v1/audio/translations end to end with the official
 * `openai` SDK over real sockets: the form reaches the backend with its model id and every
 * other field as sent, the file byte for byte; JSON and text answers pass through; the
 * multipart limits (413), a missing file or model (400); failover; the call log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { startFake, transcriptText, type FakeBackend, type FakeKnobs } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { AUDIO_FILE_LIMIT } from '../src/routes/audio.ts';

const QUIET: Partial<FakeKnobs> = {
  tokensPerSecond: 0,
  errorStatus: 0,
  errorCount: 0,
  dropAfterChunks: -1,
  stallAfterChunks: -1,
};

/** Bytes every value of which occurs, CR LF and dashes included (a boundary must not be confused by them). */
function audioFile(size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + (i >> 8)) & 0xff;
  if (size > 200) out.write('\r\n------llm-gateway-\r\n--', 100, 'latin1');
  return out;
}

type ErrorBody = { error: { message: string; type: string; param: string | null; code: string } };

describe('transcriptions through the gateway', () => {
  let local: FakeBackend;
  let cloud: FakeBackend;
  let gw: TestGateway;
  let client: OpenAI;
  const rows = (endpoint = '/v1/audio/transcriptions') =>
    gw.gateway.callLog.recent({}).filter((r) => r.endpoint === endpoint);
  const inflight = (name: string) => gw.gateway.scheduler.snapshot().backends.find((b) => b.name === name)?.inflight;
  const postForm = (form: FormData, path = '/v1/audio/transcriptions') =>
    fetch(`${gw.url}${path}`, { method: 'POST', body: form });
  const reset = () => {
    local.setKnobs(QUIET);
    cloud.setKnobs(QUIET);
  };

  before(async () => {
    // vLLM serving Whisper (free, tried first); Together as the paid fallback
    local = await startFake('vllm', { models: ['openai/whisper-large-v3'] });
    cloud = await startFake('together', { models: ['openai/whisper-large-v3'] });
    gw = await startGateway(
      [
        { name: 'local', url: local.url },
        { name: 'cloud', url: cloud.url, paid: true },
      ],
      { virtual_models: { whisper: 'openai/whisper-large-v3', 'whisper-local': { local: 'openai/whisper-large-v3' } } },
    );
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0, timeout: 30_000 });
  });
  after(async () => {
    await gw?.close();
    await local?.close();
    await cloud?.close();
  });

  test('JSON: the form reaches the backend with its model id, every field as sent, the file byte for byte', async () => {
    reset();
    const file = audioFile(50_000);
    const { data, response } = await client.audio.transcriptions
      .create({
        file: await toFile(file, 'a.wav', { type: 'audio/wav' }),
        model: 'whisper-local',
        language: 'fr',
        prompt: 'Bonjour « à tous »',
        temperature: 0.2,
        timestamp_granularities: ['word', 'segment'],
        response_format: 'json',
      })
      .withResponse();
    assert.equal(data.text, transcriptText(file, 'transcriptions', 'fr'));
    assert.equal(response.headers.get('x-gateway-backend'), 'local');
    assert.ok(response.headers.get('x-request-id'));
    const sent = local.requests.at(-1)!;
    assert.match(String(sent.headers['content-type']), /^multipart\/form-data; boundary=/);
    assert.equal(sent.headers.authorization, undefined);
    const body = sent.body;
    assert.equal(body.model, 'openai/whisper-large-v3', "the backend's id");
    assert.equal(body.language, 'fr');
    assert.equal(body.prompt, 'Bonjour « à tous »');
    assert.equal(body.temperature, '0.2');
    assert.equal(body.response_format, 'json');
    assert.deepEqual(body['timestamp_granularities[]'], ['word', 'segment']);
    assert.equal(body.file.filename, 'a.wav');
    assert.equal(body.file.type, 'audio/wav');
    assert.ok(body.file.data.equals(file), 'the file byte for byte');
  });

  test('text, srt and verbose_json answers pass through as the backend gave them', async () => {
    reset();
    const file = audioFile(3000);
    const text = await client.audio.transcriptions.create({
      file: await toFile(file, 'b.mp3'),
      model: 'whisper-local',
      response_format: 'text',
    });
    assert.equal(text, `${transcriptText(file)}\n`);
    const direct = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      body: formOf({ file: [file, 'b.mp3'], model: 'whisper-local', response_format: 'srt' }),
    });
    assert.match(direct.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(await direct.text(), /^1\n00:00:00,000 --> /);
    const verbose = await client.audio.transcriptions.create({
      file: await toFile(file, 'b.mp3'),
      model: 'whisper-local',
      response_format: 'verbose_json',
    });
    assert.equal(verbose.text, transcriptText(file));
    assert.equal(verbose.segments?.length, 1);
  });

  test('translations', async () => {
    reset();
    const file = audioFile(2000);
    const res = await client.audio.translations.create({ file: await toFile(file, 'c.ogg'), model: 'whisper' });
    assert.equal(res.text, transcriptText(file, 'translations'));
    assert.equal(local.requests.at(-1)!.path, '/v1/audio/translations');
    await waitFor(() => rows('/v1/audio/translations').length === 1, 'the translation row');
  });

  test("stream=true: OpenAI's transcript events are relayed", async () => {
    reset();
    const file = audioFile(1000);
    const stream = await client.audio.transcriptions.create({
      file: await toFile(file, 'd.wav'),
      model: 'cloud/openai/whisper-large-v3',
      stream: true,
    });
    let text = '';
    let done: string | undefined;
    for await (const ev of stream) {
      if (ev.type === 'transcript.text.delta') text += ev.delta;
      if (ev.type === 'transcript.text.done') done = ev.text;
    }
    assert.equal(text, transcriptText(file));
    assert.equal(done, transcriptText(file));
  });

  test('stream=true on vLLM: its transcription.chunk events and [DONE] are relayed as sent', async () => {
    reset();
    const file = audioFile(1000);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(file)]), 'v.wav');
    form.append('model', 'whisper-local');
    form.append('stream', 'true');
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', body: form });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'local');
    const body = await res.text();
    const datas = body
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6));
    assert.equal(datas.at(-1), '[DONE]');
    const chunks = datas.slice(0, -1).map((d) => JSON.parse(d));
    assert.ok(chunks.every((c) => c.object === 'transcription.chunk'));
    assert.equal(chunks.map((c) => c.choices[0].delta.content ?? '').join(''), transcriptText(file));
  });

  test('failover before the answer', async () => {
    reset();
    local.setKnobs({ errorStatus: 500 });
    const file = audioFile(4000);
    const { data, response } = await client.audio.transcriptions
      .create({ file: await toFile(file, 'e.wav'), model: 'whisper' })
      .withResponse();
    assert.equal(response.headers.get('x-gateway-backend'), 'cloud');
    assert.equal(data.text, transcriptText(file));
    assert.ok(local.requests.at(-1)!.body.file.data.equals(file), 'the local backend got the file first');
    assert.ok(cloud.requests.at(-1)!.body.file.data.equals(file), 'and the fallback the same file');
    reset();
  });

  test('a file larger than the limit is refused with 413, OpenAI-shaped', async () => {
    reset();
    const before = local.requests.length;
    const res = await postForm(
      formOf({ model: 'whisper-local', file: [Buffer.alloc(AUDIO_FILE_LIMIT + 1), 'big.wav'] }),
    );
    assert.equal(res.status, 413);
    const body = (await res.json()) as ErrorBody;
    assert.equal(body.error.code, 'file_too_large');
    assert.equal(body.error.param, 'file');
    assert.equal(local.requests.length, before, 'nothing was sent on');
    // the connection is fine for the next call
    const ok = await client.audio.transcriptions.create({
      file: await toFile(audioFile(10), 'f.wav'),
      model: 'whisper-local',
    });
    assert.ok(ok.text);
  });

  test('a missing file or model, a file elsewhere, two files, or no form at all: 400/415', async () => {
    reset();
    const noFile = await postForm(formOf({ model: 'whisper-local' }));
    assert.equal(noFile.status, 400);
    assert.equal(((await noFile.json()) as ErrorBody).error.param, 'file');

    const noModel = await postForm(formOf({ file: [audioFile(10), 'a.wav'] }));
    assert.equal(noModel.status, 400);
    assert.equal(((await noModel.json()) as ErrorBody).error.param, 'model');
    await assert.rejects(
      client.audio.transcriptions.create({ file: await toFile(audioFile(10), 'a.wav'), model: '' }),
      OpenAI.BadRequestError,
    );

    const elsewhere = await postForm(formOf({ model: 'whisper-local', audio: [audioFile(10), 'a.wav'] }));
    assert.equal(elsewhere.status, 400);
    assert.equal(((await elsewhere.json()) as ErrorBody).error.param, 'file');

    const two = new FormData();
    two.append('model', 'whisper-local');
    two.append('file', new Blob([audioFile(10)]), 'a.wav');
    two.append('file', new Blob([audioFile(10)]), 'b.wav');
    const twice = await postForm(two);
    assert.equal(twice.status, 400);
    assert.match(((await twice.json()) as ErrorBody).error.message, /one audio file/);

    const json = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"whisper"}',
    });
    assert.equal(json.status, 415);
    assert.equal(((await json.json()) as ErrorBody).error.code, 'unsupported_media_type');

    const unknown = await postForm(formOf({ model: 'nope', file: [audioFile(10), 'a.wav'] }));
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as ErrorBody).error.code, 'model_not_found');
    await waitFor(() => rows().some((r) => r.status === 404 && r.requested_model === 'nope'), 'the refusal on record');
    assert.equal(inflight('local'), 0);
  });

  test("the backend's error passes through as it was", async () => {
    reset();
    local.setKnobs({
      errorStatus: 400,
      errorBody: { error: { message: 'bad audio', type: 'BadRequestError', param: null, code: 400 } },
    });
    await assert.rejects(
      client.audio.transcriptions.create({ file: await toFile(audioFile(10), 'a.wav'), model: 'whisper-local' }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError);
        assert.match(err.message, /bad audio/);
        return true;
      },
    );
    local.setKnobs({ errorBody: undefined });
    reset();
  });

  test('the call log row, with the usage the backend reported', async () => {
    reset();
    const file = audioFile(12_345);
    const { response } = await client.audio.transcriptions
      .create({ file: await toFile(file, 'g.wav'), model: 'whisper' })
      .withResponse();
    const id = response.headers.get('x-request-id');
    await waitFor(() => rows().some((r) => r.request_id === id), 'the row');
    const row = rows().find((r) => r.request_id === id)!;
    assert.equal(row.status, 200);
    assert.equal(row.requested_model, 'whisper');
    assert.equal(row.model, 'openai/whisper-large-v3');
    assert.equal(row.backend, 'local');
    assert.equal(row.prompt_tokens, Math.ceil(file.length / 1000));
    assert.ok(row.completion_tokens > 0);
  });
});

describe('transcriptions behind a key', () => {
  test('an unauthenticated upload is refused with 401 before it is read', async (t) => {
    const local = await startFake('vllm', { models: ['whisper'] });
    const gw = await startGateway([{ name: 'local', url: local.url }], { api_key: 'master-key-1234567890' });
    t.after(async () => {
      await gw.close();
      await local.close();
    });
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      body: formOf({ model: 'whisper', file: [audioFile(10), 'a.wav'] }),
    });
    assert.equal(res.status, 401);
    assert.equal(local.requests.filter((r) => r.path.startsWith('/v1/audio')).length, 0);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'master-key-1234567890', maxRetries: 0 });
    const ok = await client.audio.transcriptions.create({
      file: await toFile(audioFile(10), 'a.wav'),
      model: 'whisper',
    });
    assert.equal(ok.text, transcriptText(audioFile(10)));
  });
});

/** A form from fields and [bytes, filename] files, in the order given. */
function formOf(fields: Record<string, string | [Buffer, string]>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, new Blob([value[0]]), value[1]);
  }
  return form;
}
