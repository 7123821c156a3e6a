/**
 * The console's Media jobs tab over real sockets: a gateway on fake ComfyUI boxes, logged in
 * through the form. The list (thumbnails, filters and their inline errors, refused requests),
 * a job's detail (inputs with sha256, parameter summary with seed and pins, outputs inline by
 * kind), its files through the session-gated console routes (same bytes and headers as the
 * API's), cancel (CSRF missing / wrong → 403 and nothing changed), the live event stream, and
 * XSS-shaped prompts and model names rendered as text.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { JobView } from '../src/media/service-types.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import { UiClient } from './helpers/ui.ts';
import {
  call,
  imageModels,
  isTerminal,
  MASTER,
  pngA,
  pollJob,
  readSse,
  startMediaRig,
  type MediaRig,
} from './helpers/media-gateway.ts';

const XSS_PROMPT = '<script>alert("prompt")</script> a lighthouse';
const XSS_MODEL = '<img src=x onerror=alert(1)>';
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('console · media jobs', () => {
  let rig: MediaRig;
  let ui: UiClient;
  let done: JobView;
  let video: JobView;
  let audio: JobView;

  const submit = async (body: Record<string, unknown>): Promise<JobView> => {
    const r = await call<JobView>(rig.url, 'POST', '/v1/generations', MASTER, { mode: 'async', ...body });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body;
  };
  const finished = (job: JobView) => pollJob(rig.url, job.id, MASTER, isTerminal);
  const slow = () => rig.comfy.setKnobs({ stepMs: 60, steps: 60, previews: true });
  const fast = () => rig.comfy.setKnobs({ stepMs: 20, steps: 4, previews: false });

  before(async () => {
    const models = imageModels();
    models.sd15 = [
      {
        backend: 'comfy',
        workflow_json: workflow('txt2img_sd15_api.json'),
        fixed: [{ node: '310', field: 'cfg', value: 6.5 }],
      },
    ];
    rig = await startMediaRig({ overrides: { image_models: models } });
    ui = await UiClient.login({ url: rig.url }, MASTER);
    done = await finished(await submit({ model: 'sd15', prompt: XSS_PROMPT, params: { steps: 12 } }));
    video = await finished(await submit({ model: 'wan', prompt: 'waves', images: { image: pngA.toString('base64') } }));
    audio = await finished(await submit({ model: 'audio', prompt: 'bells' }));
    const refused = await call(rig.url, 'POST', '/v1/generations', MASTER, { model: XSS_MODEL, prompt: 'x' });
    assert.equal(refused.status, 404);
  });
  after(async () => rig?.close());

  test('the tab, its files and its stream sit behind the login', async () => {
    const anonymous = new UiClient(rig.url);
    for (const path of [
      '/ui/jobs',
      `/ui/jobs/${done.id}`,
      `/ui/jobs/${done.id}/result/0`,
      `/ui/jobs/${done.id}/result/0?w=160`,
      `/ui/jobs/${video.id}/input/0`,
      `/ui/jobs/${done.id}/preview`,
      `/ui/jobs/${done.id}/events`,
    ]) {
      const res = await anonymous.get(path);
      assert.equal(res.status, 303, path);
      assert.match(res.headers.get('location') ?? '', /^\/ui\/login\?next=/, path);
    }
    const cancel = await anonymous.post(`/ui/jobs/${done.id}/cancel`, {}, { csrf: '' });
    assert.ok(cancel.status === 401 || cancel.status === 403, `anonymous cancel: ${cancel.status}`);
  });

  test('the list: a thumbnail per image job, kinds for the rest, prompts and refused model names as text', async () => {
    const html = await ui.html('/ui/jobs');
    for (const job of [done, video, audio]) assert.ok(html.includes(`href="/ui/jobs/${job.id}"`), job.model);
    assert.ok(html.includes(`src="/ui/jobs/${done.id}/result/0?w=160"`), 'a sharp thumbnail of the image');
    assert.ok(!html.includes(`src="/ui/jobs/${video.id}/result/0?w=160"`), 'no thumbnail asked of a video');
    assert.ok(!html.includes('<script>alert'), 'the prompt is escaped');
    assert.ok(html.includes('&lt;script&gt;alert(&quot;prompt&quot;)&lt;/script&gt;'));
    // the refused request, with its XSS-shaped model name as text
    assert.match(html, /Refused media requests/);
    assert.ok(!html.includes(XSS_MODEL));
    assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.match(html, /\/v1\/generations[\s\S]*?404[\s\S]*?unknown_model/);
    assert.ok(!html.includes(MASTER), 'no key in the page');
  });

  test('filters: status, model and limit narrow the list; refused values come back with 400 and an error at each field', async () => {
    const wan = await ui.html('/ui/jobs?model=wan');
    assert.ok(wan.includes(video.id) && !wan.includes(done.id) && !wan.includes(audio.id));
    const one = await ui.html('/ui/jobs?status=done&limit=1');
    assert.equal([...one.matchAll(/class="job-row /g)].length, 1);
    assert.ok(one.includes(audio.id), 'newest first');
    const none = await ui.html('/ui/jobs?status=failed');
    assert.match(none, /No media job matches/);

    const res = await ui.get('/ui/jobs?status=bogus&limit=9999&model=%3Cb%3E');
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /id="f-status"[^>]*aria-invalid="true" aria-describedby="f-status-error"/);
    assert.match(html, /id="f-status-error">Pick one of queued, running, done, failed, cancelled\./);
    assert.match(html, /id="f-limit"[^>]*value="9999"[^>]*aria-invalid="true"/);
    assert.match(html, /id="f-limit-error">Show 1 to 500 jobs\./);
    assert.match(html, /id="f-model"[^>]*value="&lt;b&gt;"/, 'the typed model comes back, escaped');
    assert.match(html, /No media job matches/, 'a model no job has: nothing listed');
    const bad = await ui.get('/ui/jobs?model=a%01b&status=bogus');
    assert.equal(bad.status, 400);
    const badHtml = await bad.text();
    assert.match(badHtml, /id="f-model-error">A model name is 1 to 200 characters/);
    assert.ok(badHtml.includes(done.id), 'the list still shows, with the defaults for refused values');
  });

  test('detail: inputs with their sha256, the parameter summary (seed, pins, nodes), outputs inline by kind', async () => {
    const v = await ui.html(`/ui/jobs/${video.id}`);
    assert.ok(v.includes(sha256(pngA)), 'the input digest');
    assert.ok(v.includes(`src="/ui/jobs/${video.id}/input/0"`), 'the input image shown');
    assert.match(
      v,
      new RegExp(`<video class="output-media" controls preload="metadata" src="/ui/jobs/${video.id}/result/0"`),
    );
    assert.ok(v.includes(video.results[0].sha256));
    assert.ok(v.includes(`>${video.seed}<`), 'the seed');
    assert.match(v, /Removed nodes<\/dt><dd class="mono">/);
    assert.match(v, /Bypassed nodes<\/dt>/);
    assert.ok(!v.includes('data-job-live'), 'a finished job is not followed');

    const a = await ui.html(`/ui/jobs/${audio.id}`);
    assert.match(
      a,
      new RegExp(`<audio class="output-media" controls preload="metadata" src="/ui/jobs/${audio.id}/result/0"`),
    );

    const d = await ui.html(`/ui/jobs/${done.id}`);
    assert.match(d, new RegExp(`<img src="/ui/jobs/${done.id}/result/0" alt="Result 0 of job ${done.id}"`));
    assert.match(
      d,
      /<td class="mono">comfy<\/td><td class="mono">310 · cfg<\/td><td class="mono wrap">6.5<\/td>/,
      'the pin on the box it ran on',
    );
    assert.match(d, /<th scope="row" class="mono">steps<\/th><td class="mono wrap">12<\/td>/, 'the request parameters');
    assert.ok(!d.includes('<script>alert') && d.includes('&lt;script&gt;alert'), 'the prompt is text');
    assert.match(d, /No files were sent with this job/);

    assert.equal((await ui.get(`/ui/jobs/job_${'0'.repeat(32)}`)).status, 404);
    assert.equal((await ui.get('/ui/jobs/not-a-job')).status, 404);
  });

  test('files: the bytes of the API, a webp thumbnail, nosniff and a sandbox CSP; malformed numbers and sizes refused', async () => {
    const fromApi = Buffer.from(
      await (
        await fetch(`${rig.url}/v1/jobs/${done.id}/result/0`, { headers: { authorization: `Bearer ${MASTER}` } })
      ).arrayBuffer(),
    );
    const res = await ui.get(`/ui/jobs/${done.id}/result/0`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('content-security-policy'), "default-src 'none'; sandbox");
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(fromApi));

    const thumb = await ui.get(`/ui/jobs/${done.id}/result/0?w=4`);
    assert.equal(thumb.headers.get('content-type'), 'image/webp');
    const meta = await sharp(Buffer.from(await thumb.arrayBuffer())).metadata();
    assert.equal(meta.format, 'webp');
    assert.ok((meta.width ?? 99) <= 4);

    const input = await ui.get(`/ui/jobs/${video.id}/input/0`);
    assert.equal(input.headers.get('content-security-policy'), "default-src 'none'; sandbox");
    assert.ok(Buffer.from(await input.arrayBuffer()).equals(pngA));

    assert.equal((await ui.get(`/ui/jobs/${done.id}/result/7`)).status, 404);
    assert.equal((await ui.get(`/ui/jobs/${done.id}/result/01`)).status, 404);
    assert.equal((await ui.get(`/ui/jobs/${done.id}/input/0`)).status, 404, 'a text-only job has no input');
    assert.equal((await ui.get(`/ui/jobs/${done.id}/result/0?w=0`)).status, 400);
    assert.equal((await ui.get(`/ui/jobs/${done.id}/result/0?w=abc`)).status, 400);
    assert.equal((await ui.get(`/ui/jobs/${done.id}/preview`)).status, 404, 'a finished job has no preview');
  });

  test('cancel: without or with a wrong CSRF token 403 and the job runs on; with the form token it is cancelled', async (t) => {
    slow();
    t.after(fast);
    const job = await submit({ model: 'sd15', prompt: 'a long one' });
    await pollJob(rig.url, job.id, MASTER, (v) => v.status === 'running' && v.progress > 0);
    const page = await ui.html(`/ui/jobs/${job.id}`);
    assert.match(page, new RegExp(`<form method="post" action="/ui/jobs/${job.id}/cancel"`));
    assert.ok(page.includes(`data-job-live="/ui/jobs/${job.id}/events"`));
    assert.match(page, /<progress max="100" value="[\d.]+" data-job-progress/);
    await pollJob(rig.url, job.id, MASTER, (v) => v.preview);
    const preview = await ui.get(`/ui/jobs/${job.id}/preview`);
    assert.equal(preview.status, 200, 'the live preview through the console');
    assert.equal(preview.headers.get('content-security-policy'), "default-src 'none'; sandbox");

    const missing = await ui.post(`/ui/jobs/${job.id}/cancel`, {}, { csrf: '' });
    assert.equal(missing.status, 403);
    assert.match(await missing.text(), /CSRF check failed/);
    const wrong = await ui.post(`/ui/jobs/${job.id}/cancel`, {}, { csrf: 'not-the-token' });
    assert.equal(wrong.status, 403);
    assert.equal(
      (await call<JobView>(rig.url, 'GET', `/v1/jobs/${job.id}`, MASTER)).body.status,
      'running',
      'nothing changed',
    );

    const ok = await ui.post(`/ui/jobs/${job.id}/cancel`, {});
    assert.equal(ok.status, 303);
    assert.equal(ok.headers.get('location'), `/ui/jobs/${job.id}?cancelled=1`);
    assert.equal((await call<JobView>(rig.url, 'GET', `/v1/jobs/${job.id}`, MASTER)).body.status, 'cancelled');
    const after = await ui.html(`/ui/jobs/${job.id}?cancelled=1`);
    assert.match(after, /The job is cancelled\./);
    assert.ok(!after.includes('/cancel"'), 'no cancel button on an ended job');

    const fromList = await ui.post(`/ui/jobs/${done.id}/cancel`, { back: 'list' });
    assert.equal(fromList.headers.get('location'), `/ui/jobs?cancelled=${done.id}`);
    assert.equal(
      (await call<JobView>(rig.url, 'GET', `/v1/jobs/${done.id}`, MASTER)).body.status,
      'done',
      'a finished job stays done',
    );
    assert.equal((await ui.post(`/ui/jobs/job_${'1'.repeat(32)}/cancel`, {})).status, 404);
  });

  test('live: the console stream re-emits progress and previews (console URLs), and its end carries the rendered parts', async (t) => {
    rig.comfy.setKnobs({ stepMs: 30, steps: 12, previews: true });
    t.after(fast);
    const job = await submit({ model: 'sd15', prompt: 'watched' });
    await pollJob(rig.url, job.id, MASTER, (v) => v.status === 'running');
    const res = await ui.get(`/ui/jobs/${job.id}/events`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const { frames, ended } = await readSse(res);
    assert.ok(ended, 'the stream ends with the job');
    const events = frames.filter((f) => f.data).map((f) => ({ type: f.event, ...JSON.parse(f.data!) }));
    assert.equal(events[0].type, 'running');
    const progress = events.filter((e) => e.type === 'progress');
    assert.ok(progress.length > 2 && progress.every((e) => e.progress >= 0 && e.progress <= 100));
    assert.ok(progress[0].parts['jobs-summary'].includes('Seed'), 'the summary once the job is compiled');
    const previews = events.filter((e) => e.type === 'preview');
    assert.ok(
      previews.length > 0 && previews.every((e) => e.url === `/ui/jobs/${job.id}/preview`),
      'preview URLs the console serves',
    );
    const end = events.at(-1)!;
    assert.equal(end.type, 'done');
    assert.equal(end.progress, 100);
    assert.match(end.parts['jobs-outputs'], new RegExp(`<img src="/ui/jobs/${job.id}/result/0"`));
    assert.match(end.parts['jobs-state'], /status big done/);
    assert.ok(!JSON.stringify(events).includes('/v1/'), 'no API URL reaches the page');

    const replay = await readSse(await ui.get(`/ui/jobs/${job.id}/events`));
    assert.deepEqual(
      replay.frames.filter((f) => f.data).map((f) => f.event),
      ['done'],
      'a finished job: its end at once',
    );
    assert.equal((await ui.get(`/ui/jobs/job_${'2'.repeat(32)}/events`)).status, 404);
  });
});
