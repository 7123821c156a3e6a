/**
 * ComfyClient against the fake ComfyUI over real sockets: upload, submit (raw prompt text),
 * progress over one reconnecting websocket filtered to our prompts, waitFor with /history as
 * the truth (interrupt, dequeue, timeout, lost, unreachable, polling only), outputs and view.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ComfyClient, type ComfyProgressEvent } from '../src/media/comfy/client.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import { PNG_SIGNATURE, fakePng } from './fakes/comfyui-media.ts';
import type { ComfyFake, ComfyKnobs } from './fakes/comfyui-types.ts';
import { defaultWorkflow, loadImageWorkflow } from './fakes/comfyui-workflows.ts';

async function fakeFor(t: TestContext, knobs: Partial<ComfyKnobs> = {}): Promise<ComfyFake> {
  const fake = await startComfyFake({ knobs });
  t.after(() => fake.close());
  return fake;
}

function clientFor(
  t: TestContext,
  fake: { url: string },
  extra: Partial<ConstructorParameters<typeof ComfyClient>[0]> = {},
): ComfyClient {
  const client = new ComfyClient({
    baseUrl: fake.url,
    clientId: randomUUID(),
    readTimeoutMs: 2000,
    minBackoffMs: 50,
    maxBackoffMs: 200,
    ...extra,
  });
  t.after(() => client.close());
  return client;
}

async function until(pred: () => boolean, timeoutMs = 3000, what = 'condition'): Promise<void> {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function watching(client: ComfyClient): Promise<void> {
  client.watch();
  await until(() => client.watching, 3000, 'websocket open');
}

const text = (wf: unknown) => JSON.stringify(wf);
const summary = (events: ComfyProgressEvent[]) =>
  events.map((e) => {
    switch (e.kind) {
      case 'executing':
      case 'executed':
        return `${e.kind}:${e.node}`;
      case 'progress':
        return `progress:${e.node}:${e.value}/${e.max}`;
      case 'cached':
        return `cached:${e.nodes.join(',')}`;
      default:
        return e.kind;
    }
  });

test('upload, submit, progress for our prompt only, waitFor done, outputs, view', async (t) => {
  const fake = await fakeFor(t);
  const ourId = randomUUID();
  const ours = clientFor(t, fake, { clientId: ourId });
  const other = clientFor(t, fake);
  await watching(ours);
  await watching(other);

  const png = fakePng('job-input', { size: 8 });
  const up = await ours.upload('job-1234-input.png', png, 'image/png');
  assert.deepEqual(up, { ok: true, name: 'job-1234-input.png', subfolder: '' });
  assert.ok(fake.uploads.get('job-1234-input.png')?.equals(png));
  const form = fake.requests.find((r) => r.path === '/upload/image')!.body as any;
  assert.equal(form.fields.overwrite, 'true');
  assert.equal(form.fields.type, 'input');

  // the other client submits at the same time (a sampler: progress events we must not see)
  const [a, b] = await Promise.all([
    ours.submit(text(loadImageWorkflow('job-1234-input.png'))),
    other.submit(text(defaultWorkflow())),
  ]);
  assert.ok(a.ok && b.ok, JSON.stringify([a, b]));
  const mine: ComfyProgressEvent[] = [];
  const theirs: ComfyProgressEvent[] = [];
  ours.onProgress(a.promptId, (e) => mine.push(e));
  other.onProgress(b.promptId, (e) => theirs.push(e));
  assert.equal(fake.prompts.find((p) => p.id === a.promptId)!.clientId, ourId, 'submitted under our own client id');

  const [ra, rb] = await Promise.all([
    ours.waitFor(a.promptId, { pollMs: 50, maxWaitMs: 5000 }),
    other.waitFor(b.promptId, { pollMs: 50, maxWaitMs: 5000 }),
  ]);
  assert.equal(ra.kind, 'done');
  assert.equal(rb.kind, 'done');
  assert.deepEqual(summary(mine), ['cached:', 'executing:1', 'executing:2', 'executed:2', 'success']);
  const s = summary(theirs);
  assert.deepEqual(
    s.filter((x) => x.startsWith('progress')),
    ['progress:3:1/4', 'progress:3:2/4', 'progress:3:3/4', 'progress:3:4/4'],
  );
  assert.equal(s.at(-1), 'success');
  assert.ok(s.indexOf('executing:3') < s.indexOf('progress:3:1/4'));

  if (ra.kind !== 'done') return;
  const files = ours.outputs(ra.entry);
  assert.equal(files.length, 1);
  assert.equal(files[0]!.node, '2');
  assert.equal(files[0]!.key, 'images');
  assert.equal(files[0]!.type, 'temp');
  const v = await ours.view(files[0]!);
  assert.ok(v.ok);
  if (!v.ok) return;
  assert.ok(v.bytes.equals(fake.files.get(`temp/${files[0]!.filename}`)!));
  assert.equal(v.contentType, 'image/png');

  const missing = await ours.view({ filename: 'nope.png', subfolder: '', type: 'output' });
  assert.equal(missing.ok, false);
  assert.equal(!missing.ok && missing.status, 404);
  const small = clientFor(t, fake, { maxViewBytes: 10 });
  const tooBig = await small.view(files[0]!);
  assert.equal(tooBig.ok, false);
});

test('outputs() walks every list-valued key (gifs, audio, 3d…) and skips non-files', () => {
  const client = new ComfyClient({ baseUrl: 'http://127.0.0.1:1', clientId: 'x', readTimeoutMs: 100 });
  const files = client.outputs({
    outputs: {
      '10': {
        gifs: [{ filename: 'a.mp4', subfolder: 'video', type: 'output', format: 'video/h264-mp4' }],
        animated: [true],
      },
      '11': { audio: [{ filename: 'b.flac', subfolder: 'audio', type: 'output' }], text: ['hello'] },
      '12': { '3d': [{ filename: 'c.glb', subfolder: 'mesh', type: 'output' }] },
    },
  });
  assert.deepEqual(
    files.map((f) => `${f.node}:${f.key}:${f.subfolder}/${f.filename}`),
    ['10:gifs:video/a.mp4', '11:audio:audio/b.flac', '12:3d:mesh/c.glb'],
  );
  client.close();
});

test('validation 400 → ok:false with node errors; a bad prompt text is refused before sending', async (t) => {
  const fake = await fakeFor(t);
  const client = clientFor(t, fake);
  const wf = defaultWorkflow();
  wf['4'].inputs.ckpt_name = 'no-such-model.safetensors';
  const r = await client.submit(text(wf));
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.status, 400);
  assert.equal(r.type, 'prompt_outputs_failed_validation');
  assert.ok(r.nodeErrors && Object.keys(r.nodeErrors).length > 0, JSON.stringify(r));
  const bad = await client.submit('{"1": ');
  assert.deepEqual(bad.ok, false);
  assert.equal(fake.requests.filter((q) => q.path === '/prompt').length, 1);
});

test('a big-integer seed in the prompt text reaches ComfyUI exactly', async (t) => {
  const fake = await fakeFor(t);
  const client = clientFor(t, fake);
  const prompt = text(defaultWorkflow('x', 1)).replace('"seed":1', '"seed":9007199254740993');
  assert.ok(prompt.includes('9007199254740993'));
  const r = await client.submit(prompt);
  assert.ok(r.ok, JSON.stringify(r));
  const raw = fake.requests.find((q) => q.path === '/prompt')!.rawBody.toString('utf8');
  assert.ok(raw.includes('"seed":9007199254740993'), raw);
  assert.ok(raw.includes(`"client_id":"${fake.prompts[0]!.extraData.client_id as string}"`));
  if (r.ok) assert.equal((await client.waitFor(r.promptId, { pollMs: 20, maxWaitMs: 5000 })).kind, 'done');
});

test('targeted interrupt of a running prompt → interrupted', async (t) => {
  const fake = await fakeFor(t, { stepMs: 50, steps: 40 });
  const client = clientFor(t, fake);
  await watching(client);
  const r = await client.submit(text(defaultWorkflow()));
  assert.ok(r.ok);
  if (!r.ok) return;
  let progressed = false;
  client.onProgress(r.promptId, (e) => {
    if (e.kind === 'progress') progressed = true;
  });
  const wait = client.waitFor(r.promptId, { pollMs: 1000, maxWaitMs: 10_000 });
  await until(() => progressed, 3000, 'progress');
  assert.deepEqual(await client.interrupt(r.promptId), { ok: true });
  assert.deepEqual(await wait, { kind: 'interrupted' }); // the ws hint polls at once (pollMs is 1 s)
  assert.equal(fake.interrupts(), 1);
  const body = fake.requests.find((q) => q.path === '/interrupt')!.body;
  assert.deepEqual(body, { prompt_id: r.promptId });
});

test('cancel (signal) of a pending prompt dequeues it; of a running one interrupts it', async (t) => {
  const fake = await fakeFor(t, { stepMs: 50, steps: 40 });
  const client = clientFor(t, fake);
  const running = await client.submit(text(defaultWorkflow('first')));
  const pending = await client.submit(text(defaultWorkflow('second')));
  assert.ok(running.ok && pending.ok);
  if (!running.ok || !pending.ok) return;
  await until(() => fake.prompts[0]!.status === 'running', 3000, 'first running');

  const ac = new AbortController();
  const wait = client.waitFor(pending.promptId, { pollMs: 20, maxWaitMs: 10_000, signal: ac.signal });
  setTimeout(() => ac.abort(), 50);
  assert.deepEqual(await wait, { kind: 'interrupted' });
  assert.equal(fake.prompts[1]!.status, 'deleted');
  assert.equal(fake.prompts[0]!.status, 'running', 'the targeted interrupt did not hit the other prompt');

  const ac2 = new AbortController();
  const wait2 = client.waitFor(running.promptId, { pollMs: 20, maxWaitMs: 10_000, signal: ac2.signal });
  setTimeout(() => ac2.abort(), 30);
  assert.deepEqual(await wait2, { kind: 'interrupted' });
  await until(() => fake.prompts[0]!.status === 'interrupted', 3000, 'first interrupted');
  assert.equal(fake.interrupts(), 1);

  // an already aborted signal on a stuck server: dequeued without waiting
  fake.setKnobs({ stuck: true });
  const third = await client.submit(text(defaultWorkflow('third')));
  assert.ok(third.ok);
  if (!third.ok) return;
  assert.deepEqual(
    await client.waitFor(third.promptId, { pollMs: 20, maxWaitMs: 10_000, signal: AbortSignal.abort() }),
    { kind: 'interrupted' },
  );
  assert.equal(fake.prompts[2]!.status, 'deleted');
  assert.deepEqual(await client.queue(), { ok: true, running: [], pending: [] });
});

test('maxWaitMs → timeout, and our prompt is interrupted', async (t) => {
  const fake = await fakeFor(t, { stepMs: 100, steps: 50 });
  const client = clientFor(t, fake);
  const r = await client.submit(text(defaultWorkflow()));
  assert.ok(r.ok);
  if (!r.ok) return;
  const start = Date.now();
  assert.deepEqual(await client.waitFor(r.promptId, { pollMs: 50, maxWaitMs: 300 }), { kind: 'timeout' });
  assert.ok(Date.now() - start < 1500);
  assert.deepEqual(fake.requests.find((q) => q.path === '/interrupt')?.body, { prompt_id: r.promptId });
  await until(() => fake.prompts[0]!.status === 'interrupted', 3000, 'interrupted');
  assert.equal(fake.interrupts(), 1);
});

test('the websocket dropped by a restart reconnects and a later job still gets progress', async (t) => {
  const fake = await fakeFor(t);
  const client = clientFor(t, fake);
  await watching(client);
  assert.equal(client.wsOpens, 1);
  await fake.restart({ downMs: 300, mode: 'refused' });
  await until(() => client.wsOpens >= 2 && client.watching, 5000, 'reconnect');
  assert.ok(fake.wsClients().length === 1);
  const r = await client.submit(text(defaultWorkflow()));
  assert.ok(r.ok);
  if (!r.ok) return;
  const events: ComfyProgressEvent[] = [];
  client.onProgress(r.promptId, (e) => events.push(e));
  assert.equal((await client.waitFor(r.promptId, { pollMs: 50, maxWaitMs: 5000 })).kind, 'done');
  assert.equal(events.filter((e) => e.kind === 'progress').length, 4);
  assert.equal(events.at(-1)!.kind, 'success');
});

test('a restart that loses a queued prompt → lost; a dead server → unreachable', async (t) => {
  const fake = await fakeFor(t, { stuck: true });
  const client = clientFor(t, fake);
  const r = await client.submit(text(defaultWorkflow()));
  assert.ok(r.ok);
  if (!r.ok) return;
  const wait = client.waitFor(r.promptId, { pollMs: 20, maxWaitMs: 10_000, queueCheckEvery: 2 });
  await new Promise((res) => setTimeout(res, 60));
  await fake.restart({ downMs: 100, mode: '503' });
  assert.deepEqual(await wait, { kind: 'lost' });

  const r2 = await client.submit(text(defaultWorkflow('again')));
  assert.ok(r2.ok);
  if (!r2.ok) return;
  await fake.close();
  const res = await client.waitFor(r2.promptId, { pollMs: 20, maxWaitMs: 10_000, unreachableAfterMs: 150 });
  assert.equal(res.kind, 'unreachable');
  const up = await client.upload('x.png', Buffer.from('x'), 'image/png');
  assert.equal(up.ok, false);
  const sub = await client.submit(text(defaultWorkflow()));
  assert.equal(sub.ok, false);
  assert.equal(!sub.ok && sub.status, 0);
});

test('waitFor completes with the websocket never connected (polling only)', async (t) => {
  const fake = await fakeFor(t);
  const client = clientFor(t, fake);
  const r = await client.submit(text(defaultWorkflow()));
  assert.ok(r.ok);
  if (!r.ok) return;
  const res = await client.waitFor(r.promptId, { pollMs: 20, maxWaitMs: 5000 });
  assert.equal(res.kind, 'done');
  assert.equal(fake.requests.filter((q) => q.ws).length, 0);
  assert.equal(client.watching, false);
  if (res.kind === 'done') assert.equal(client.outputs(res.entry)[0]!.filename, 'komfy_apitest_00001_.png');
});

test('a failing node → failed with its message and node', async (t) => {
  const fake = await fakeFor(t, { failNode: '8' });
  const client = clientFor(t, fake);
  await watching(client);
  const r = await client.submit(text(defaultWorkflow()));
  assert.ok(r.ok);
  if (!r.ok) return;
  const events: ComfyProgressEvent[] = [];
  client.onProgress(r.promptId, (e) => events.push(e));
  const res = await client.waitFor(r.promptId, { pollMs: 1000, maxWaitMs: 5000 });
  assert.equal(res.kind, 'failed');
  if (res.kind === 'failed') {
    assert.equal(res.node, '8');
    assert.match(res.message, /knob failNode/);
  }
  assert.deepEqual(events.at(-1), { kind: 'error', message: res.kind === 'failed' ? res.message : '', node: '8' });
});

test('preview frames with previews: true (type 4 with metadata, and type 1 without)', async (t) => {
  const fake = await fakeFor(t, { previews: true });
  for (const previewMetadata of [true, false]) {
    const client = clientFor(t, fake, { previewMetadata });
    await watching(client);
    const r = await client.submit(text(defaultWorkflow(`preview ${previewMetadata}`)));
    assert.ok(r.ok);
    if (!r.ok) return;
    const previews: Array<{ mime: string; bytes: Buffer }> = [];
    let latest: { mime: string; bytes: Buffer } | undefined;
    client.onProgress(r.promptId, (e) => {
      if (e.kind === 'preview') {
        previews.push(e);
        latest = client.latestPreview(r.promptId);
      }
    });
    assert.equal((await client.waitFor(r.promptId, { pollMs: 50, maxWaitMs: 5000 })).kind, 'done');
    assert.equal(previews.length, 4, `previewMetadata ${previewMetadata}`);
    assert.equal(previews[0]!.mime, 'image/png');
    assert.ok(previews[0]!.bytes.subarray(0, 8).equals(PNG_SIGNATURE));
    assert.ok(latest?.bytes.equals(previews.at(-1)!.bytes));
    assert.equal(client.latestPreview(r.promptId), undefined, 'forgotten after waitFor');
    client.close();
  }
});
