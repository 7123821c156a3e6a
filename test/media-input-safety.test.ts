/**
 * What a client-supplied file may be, over sockets on fake ComfyUI boxes: only an admin's URLs
 * may point into the gateway's own network (`ref_url_allow_private` is the admins' switch; a
 * user key or an open gateway's client is always refused one); a file is checked against the
 * media its input loads by its bytes, so a text page fetched for an image slot (the gateway's
 * own /metrics) is refused 400 `invalid_file` before any job exists — never stored, never sent
 * to a box, never served back from /v1/jobs/{id}/input — and so is a non-image upload in an
 * edit (the real `openai` SDK's images.edit), without any path of the box in the answer; so is
 * a PNG or JPEG signature whose header does not parse (a page behind an image's first bytes).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIError, toFile } from 'openai';
import type { JobView } from '../src/media/service-types.ts';
import { call, createUser, MASTER, pngA, startMediaRig, type MediaRig } from './helpers/media-gateway.ts';

type Answer = { error?: { code?: string; param?: string; message?: string } } & Partial<JobView>;

/** The SDK's error for an edit whose `image` part is not a picture: a 400 `invalid_file` naming it; its body. */
function invalidImageFile(err: unknown): { code?: string; param?: string; message?: string } {
  assert.ok(err instanceof APIError, String(err));
  assert.equal(err.status, 400);
  const body = err.error as { code?: string; param?: string; message?: string };
  assert.equal(body.code, 'invalid_file');
  assert.equal(body.param, 'image');
  return body;
}

describe('media input safety', () => {
  let rig: MediaRig;
  let userKey = '';

  before(async () => {
    rig = await startMediaRig();
    userKey = await createUser(rig.url, 'plain-user');
  });
  after(async () => rig?.close());

  const jobCount = async (key: string) =>
    (await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs', key)).body.data.length;
  const generate = (key: string, body: unknown) => call<Answer>(rig.url, 'POST', '/v1/generations', key, body);
  const metricsUrl = () => `${rig.url}/metrics`;

  test('a user key may not make the gateway fetch a loopback URL with the default settings', async () => {
    const before = rig.comfy.prompts.length;
    const native = await generate(userKey, { model: 'wan', prompt: 'p', images: { image: metricsUrl() } });
    assert.equal(native.status, 400, JSON.stringify(native.body));
    assert.equal(native.body.error?.code, 'private_address');
    assert.equal(native.body.error?.param, 'images.image');
    const images = await call<Answer>(rig.url, 'POST', '/v1/images/generations', userKey, {
      model: 'wan',
      prompt: 'p',
      ref_images: [`${rig.url}/v1/models`],
    });
    assert.equal(images.status, 400, JSON.stringify(images.body));
    assert.equal(images.body.error?.code, 'private_address');
    assert.equal(await jobCount(userKey), 0, 'no job was filed');
    assert.equal(rig.comfy.prompts.length, before);
  });

  test('an admin may fetch a loopback URL, but a text page for an image slot is refused, nothing kept', async () => {
    const before = await jobCount(MASTER);
    const r = await generate(MASTER, { model: 'wan', prompt: 'p', mode: 'async', images: { image: metricsUrl() } });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error?.code, 'invalid_file');
    assert.equal(r.body.error?.param, 'image');
    assert.doesNotMatch(r.body.error?.message ?? '', /gateway_|# HELP|# TYPE/, 'none of the fetched bytes come back');
    assert.equal(await jobCount(MASTER), before, 'no job, so no /input/0 to read the page back from');

    const refs = await call<Answer>(rig.url, 'POST', '/v1/images/generations', MASTER, {
      model: 'wan',
      prompt: 'p',
      ref_images: [metricsUrl()],
    });
    assert.equal(refs.status, 400, JSON.stringify(refs.body));
    assert.equal(refs.body.error?.code, 'invalid_file');
    assert.equal(refs.body.error?.param, 'ref_images[0]');
    assert.equal(await jobCount(MASTER), before);
  });

  test("an admin's private URLs follow ref_url_allow_private: off, they are refused too", async (t) => {
    rig.gw.gateway.config().ref_url_allow_private = false;
    t.after(() => {
      rig.gw.gateway.config().ref_url_allow_private = true;
    });
    const r = await generate(MASTER, { model: 'wan', prompt: 'p', images: { image: metricsUrl() } });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error?.code, 'private_address');
  });

  test('images.edit with text in the image part: 400 invalid_file naming `image`, no path, no job', async () => {
    const client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: userKey, maxRetries: 0 });
    const before = rig.edit.prompts.length;
    const err = await client.images
      .edit({
        model: 'inpaint',
        prompt: 'p',
        image: await toFile(Buffer.from('not a picture, only some words\n'), 'photo.png', { type: 'image/png' }),
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const body = invalidImageFile(err);
    assert.doesNotMatch(body.message ?? '', /\/|\\/, 'no path in the message');
    assert.equal(rig.edit.prompts.length, before, 'nothing reached the box');
    assert.equal(await jobCount(userKey), 0);

    const mask = await client.images
      .edit({
        model: 'inpaint',
        prompt: 'p',
        image: await toFile(pngA, 'a.png', { type: 'image/png' }),
        mask: await toFile(Buffer.from('{"not": "a mask"}'), 'mask.png', { type: 'image/png' }),
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(mask instanceof APIError, String(mask));
    assert.equal(mask.status, 400);
    assert.equal((mask.error as { param?: string }).param, 'mask');
  });

  test('a named file for an image slot through the native API is checked too: base64 text is refused', async () => {
    const words = Buffer.from('plain words').toString('base64');
    const r = await generate(userKey, { model: 'wan', prompt: 'p', images: { image: words } });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error?.code, 'invalid_file');
    assert.equal(r.body.error?.param, 'image');
    const ok = await generate(userKey, { model: 'wan', prompt: 'p', images: { image: pngA.toString('base64') } });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });

  test('a PNG (or JPEG) signature with anything but an image after it: 400 invalid_file, before any job', async () => {
    const client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: userKey, maxRetries: 0 });
    const html = Buffer.from('<html><script>alert(1)</script></html>');
    const before = { edit: rig.edit.prompts.length, comfy: rig.comfy.prompts.length, jobs: await jobCount(userKey) };
    const err = await client.images
      .edit({
        model: 'inpaint',
        prompt: 'p',
        image: await toFile(Buffer.concat([pngA.subarray(0, 33), html]), 'a.png'),
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const body = invalidImageFile(err);
    assert.match(body.message ?? '', /damaged/);

    const jpegHead = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), html]);
    const native = await generate(userKey, {
      model: 'wan',
      prompt: 'p',
      images: { image: jpegHead.toString('base64') },
    });
    assert.equal(native.status, 400, JSON.stringify(native.body));
    assert.equal(native.body.error?.code, 'invalid_file');
    assert.equal(native.body.error?.param, 'image');
    assert.deepEqual(
      { edit: rig.edit.prompts.length, comfy: rig.comfy.prompts.length, jobs: await jobCount(userKey) },
      before,
      'nothing reached a box, no job was filed',
    );
    // a whole PNG with bytes after its end is an image all the same
    const whole = Buffer.concat([pngA, html]).toString('base64');
    const tail = await generate(userKey, { model: 'wan', prompt: 'p', images: { image: whole } });
    assert.equal(tail.status, 200, JSON.stringify(tail.body));
  });

  test("a box's error reaches the job's owner without the box's folders: file names only", async (t) => {
    rig.comfy.setKnobs({
      failNode: '310',
      failMessage: "[Errno 2] No such file or directory: '/home/comfy/ComfyUI/input/upload_17.png'",
    });
    t.after(() => rig.comfy.setKnobs({ failNode: undefined, failMessage: undefined }));
    const r = await generate(userKey, { model: 'sd15', prompt: 'p' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'failed');
    assert.equal(r.body.error?.code, 'execution_error');
    assert.match(r.body.error?.message ?? '', /No such file or directory: 'upload_17\.png'/);
    assert.doesNotMatch(r.body.error?.message ?? '', /\/home|ComfyUI\/input/);
    const viewed = await call<Answer>(rig.url, 'GET', `/v1/jobs/${r.body.id}`, userKey);
    assert.doesNotMatch(JSON.stringify(viewed.body), /\/home\/comfy/);
  });
});
