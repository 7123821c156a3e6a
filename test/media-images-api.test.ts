/**
 * The OpenAI Images API on ComfyUI, over sockets with the real `openai` SDK against a gateway
 * wired to fake ComfyUI boxes running the real fixture workflows: generate (b64_json, url,
 * output_format conversions, the OpenAI knobs that mean nothing here), edit (image + mask),
 * LocalAI's ref_images, failures (502, not retried) and cancellations (409), the envelope's
 * refusals (each a 4xx naming its param, logged as refused), and `/v1/models?type=`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIError, toFile } from 'openai';
import sharp from 'sharp';
import type { JobView } from '../src/media/service-types.ts';
import { waitFor } from './helpers/wait.ts';
import {
  bearer,
  call,
  createUser,
  maskPng,
  MASTER,
  pngA,
  startMediaRig,
  uploadsOf,
  type MediaRig,
} from './helpers/media-gateway.ts';

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

describe('the OpenAI Images API', () => {
  let rig: MediaRig;
  let client: OpenAI;

  before(async () => {
    rig = await startMediaRig();
    client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: MASTER, maxRetries: 0 });
  });
  after(async () => rig?.close());

  const lastPrompt = () => rig.comfy.prompts.at(-1)!.prompt;

  test('images.generate with b64_json: a PNG inline; size, n and workflow params reach the workflow; OpenAI-only knobs are ignored', async () => {
    const res = await client.images.generate({
      model: 'sd15',
      prompt: 'a lighthouse at dusk',
      size: '512x512',
      n: 2,
      response_format: 'b64_json',
      quality: 'high',
      style: 'vivid',
      user: 'someone',
      steps: 7,
    } as OpenAI.ImageGenerateParamsNonStreaming);
    assert.ok(Number.isInteger(res.created) && res.created > 0);
    assert.equal(res.data?.length, 1);
    const png = Buffer.from(res.data![0].b64_json!, 'base64');
    assert.ok(png.subarray(0, 4).equals(PNG_MAGIC), 'a PNG');
    assert.equal(res.data![0].url, undefined);
    const prompt = lastPrompt();
    assert.equal(prompt['61'].inputs.value, 'a lighthouse at dusk');
    assert.equal(prompt['146'].inputs.value, 512);
    assert.equal(prompt['147'].inputs.value, 512);
    assert.equal(prompt['311'].inputs.batch_size, 2);
    assert.equal(prompt['310'].inputs.steps, 7);
  });

  test('b64_json is the default; images.generate with url: an absolute job-result URL that needs the key', async () => {
    const inline = await fetch(`${rig.url}/v1/images/generations`, {
      method: 'POST',
      headers: { ...bearer(MASTER), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sd15', prompt: 'x' }),
    });
    assert.equal(inline.status, 200);
    assert.ok(((await inline.json()) as { data: { b64_json?: string }[] }).data[0].b64_json);

    const res = await client.images.generate({ model: 'sd15', prompt: 'a harbour', response_format: 'url' });
    const url = res.data![0].url!;
    assert.match(url, new RegExp(`^${rig.url}/v1/jobs/job_[0-9a-f]{32}/result/0$`));
    const file = await fetch(url, { headers: bearer(MASTER) });
    assert.equal(file.status, 200);
    assert.equal(file.headers.get('content-type'), 'image/png');
    assert.match(file.headers.get('content-disposition') ?? '', /^inline; filename="job_[0-9a-f]{32}-0\.png"$/);
    assert.match(file.headers.get('cache-control') ?? '', /^private, max-age=\d+$/);
    assert.ok(
      Buffer.from(await file.arrayBuffer())
        .subarray(0, 4)
        .equals(PNG_MAGIC),
    );
    assert.equal((await fetch(url)).status, 401, 'not without the key');
  });

  test('output_format converts with sharp: webp, jpeg with output_compression; a url asks for the format at full size', async () => {
    const webp = await client.images.generate({
      model: 'sd15',
      prompt: 'a',
      output_format: 'webp',
      response_format: 'b64_json',
    } as OpenAI.ImageGenerateParamsNonStreaming);
    const wbytes = Buffer.from(webp.data![0].b64_json!, 'base64');
    assert.equal((await sharp(wbytes).metadata()).format, 'webp');
    const small = await client.images.generate({
      model: 'sd15',
      prompt: 'a',
      output_format: 'jpeg',
      output_compression: 10,
      response_format: 'b64_json',
    } as OpenAI.ImageGenerateParamsNonStreaming);
    const best = await client.images.generate({
      model: 'sd15',
      prompt: 'a',
      output_format: 'jpeg',
      output_compression: 100,
      response_format: 'b64_json',
    } as OpenAI.ImageGenerateParamsNonStreaming);
    const jpeg = Buffer.from(small.data![0].b64_json!, 'base64');
    assert.equal((await sharp(jpeg).metadata()).format, 'jpeg');
    assert.ok(
      jpeg.length < Buffer.from(best.data![0].b64_json!, 'base64').length,
      'lower output_compression, smaller file',
    );
    const png = await client.images.generate({
      model: 'sd15',
      prompt: 'a',
      output_format: 'png',
      response_format: 'b64_json',
    } as OpenAI.ImageGenerateParamsNonStreaming);
    assert.ok(Buffer.from(png.data![0].b64_json!, 'base64').subarray(0, 4).equals(PNG_MAGIC), 'already PNG: as made');

    const viaUrl = await client.images.generate({
      model: 'sd15',
      prompt: 'a',
      output_format: 'webp',
      response_format: 'url',
    } as OpenAI.ImageGenerateParamsNonStreaming);
    const url = viaUrl.data![0].url!;
    assert.match(url, /\/result\/0\?format=webp&w=\d+&h=\d+$/);
    const file = await fetch(url, { headers: bearer(MASTER) });
    assert.equal(file.headers.get('content-type'), 'image/webp');
    const meta = await sharp(Buffer.from(await file.arrayBuffer())).metadata();
    const job = (await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs?limit=1', MASTER)).body.data[0];
    assert.equal(meta.width, job.results[0].width, 'its own size, not a thumbnail');
  });

  test("images.edit with image + mask: each lands in its own slot, uploaded under the job's own names", async () => {
    const res = await client.images.edit({
      model: 'inpaint',
      prompt: 'fill the hole',
      response_format: 'b64_json',
      image: await toFile(pngA, 'canvas.png', { type: 'image/png' }),
      mask: await toFile(maskPng, 'mask.png', { type: 'image/png' }),
    });
    assert.ok(Buffer.from(res.data![0].b64_json!, 'base64').subarray(0, 4).equals(PNG_MAGIC));
    const [image] = uploadsOf(rig.edit, pngA);
    const [mask] = uploadsOf(rig.edit, maskPng);
    assert.match(image ?? '', /^gw_job_[0-9a-f]{32}_image\.png$/);
    assert.match(mask ?? '', /^gw_job_[0-9a-f]{32}_mask\.png$/);
    const prompt = rig.edit.prompts.at(-1)!.prompt;
    assert.equal(prompt['378'].inputs.image, image);
    assert.equal(prompt['377'].inputs.image, mask);
    assert.equal(prompt['61'].inputs.value, 'fill the hole');
  });

  test('ref_images (LocalAI): data URIs onto the image slots in order', async () => {
    const before = uploadsOf(rig.edit, pngA).length;
    const res = await call(rig.url, 'POST', '/v1/images/generations', MASTER, {
      model: 'inpaint',
      prompt: 'p',
      ref_images: [`data:image/png;base64,${pngA.toString('base64')}`],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(uploadsOf(rig.edit, pngA).length, before + 1);
    const bad = await call(rig.url, 'POST', '/v1/images/generations', MASTER, {
      model: 'inpaint',
      prompt: 'p',
      ref_images: ['%%%'],
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'ref_images[0]');
  });

  test("a failed job is a 502 server_error with the job's reason, and the SDK does not retry it", async (t) => {
    rig.comfy.setKnobs({ failNode: '124' });
    t.after(() => rig.comfy.setKnobs({ failNode: undefined }));
    const retrying = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: MASTER, maxRetries: 2 });
    const prompts = rig.comfy.prompts.length;
    const err = await retrying.images.generate({ model: 'sd15', prompt: 'doomed' }).catch((e: unknown) => e);
    assert.ok(err instanceof APIError, String(err));
    assert.equal(err.status, 502);
    assert.equal(err.type, 'server_error');
    assert.equal(err.code, 'generation_failed');
    assert.match(err.message, /job job_[0-9a-f]{32}/);
    assert.equal(err.headers?.get('x-should-retry'), 'false');
    assert.equal(rig.comfy.prompts.length, prompts + 1, 'one run, no retry');
  });

  test('a generation cancelled while the client waits is a 409', async (t) => {
    rig.comfy.setKnobs({ stepMs: 100, steps: 50 });
    t.after(() => rig.comfy.setKnobs({ stepMs: 20, steps: 4 }));
    const pending = client.images.generate({ model: 'sd15', prompt: 'slow' }).catch((e: unknown) => e);
    let id = '';
    await waitFor(
      async () => {
        const list = await call<{ data: JobView[] }>(rig.url, 'GET', '/v1/jobs?status=running', MASTER);
        id = list.body.data[0]?.id ?? '';
        return id !== '';
      },
      'the job runs',
      5000,
    );
    assert.equal((await call(rig.url, 'POST', `/v1/jobs/${id}/cancel`, MASTER)).status, 200);
    const err = await pending;
    assert.ok(err instanceof APIError, String(err));
    assert.equal(err.status, 409);
    assert.equal(err.code, 'generation_cancelled');
  });

  test('refusals name their param, are 4xx, and go into the call log as refused', async () => {
    const gen = (body: unknown, key = MASTER) => call(rig.url, 'POST', '/v1/images/generations', key, body);
    const cases: [unknown, number, string | null, string][] = [
      [{ model: 'sd15', prompt: 'p', stream: true }, 400, 'stream', 'unsupported_parameter'],
      [{ model: 'sd15', prompt: 'p', size: '512x' }, 400, 'size', 'invalid_size'],
      [{ model: 'sd15', prompt: 'p', n: 0 }, 400, 'n', 'invalid_n'],
      [{ model: 'sd15', prompt: 'p', response_format: 'jpeg' }, 400, 'response_format', 'invalid_response_format'],
      [{ model: 'sd15', prompt: 'p', output_format: 'gif' }, 400, 'output_format', 'invalid_output_format'],
      [
        { model: 'sd15', prompt: 'p', output_format: 'webp', output_compression: 101 },
        400,
        'output_compression',
        'invalid_output_compression',
      ],
      [{ model: 'sd15' }, 400, 'prompt', 'missing_prompt'],
      [{ prompt: 'p' }, 400, 'model', 'missing_model'],
      [{ model: 'nope', prompt: 'p' }, 404, 'model', 'model_not_found'],
      [{ model: 'sd15', prompt: 'p', no_such_knob: 3 }, 400, 'no_such_knob', 'invalid_parameter'],
      [[1, 2], 400, null, 'invalid_request'],
    ];
    for (const [body, status, param, code] of cases) {
      const r = await gen(body);
      assert.equal(r.status, status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.param, param, JSON.stringify(body));
      assert.equal(r.body.error.code, code, JSON.stringify(body));
    }
    assert.equal((await gen({ model: 'sd15', prompt: 'p' }, '')).status, 401);
    assert.equal(
      (await call(rig.url, 'POST', '/v1/images/generations', MASTER, '{"model": "sd15", ')).status,
      400,
      'not JSON',
    );

    const rows = rig.gw.gateway.callLog.recent({ status: 400 });
    const badSize = rows.find((r) => r.endpoint === '/v1/images/generations' && r.reason === 'invalid_size');
    assert.ok(badSize, 'the refusal is on record');
    assert.equal(badSize.backend, '(refused)');
    assert.equal(badSize.requested_model, 'sd15');
    assert.ok(
      rig.gw.gateway.callLog
        .recent({ status: 404 })
        .some((r) => r.endpoint === '/v1/images/generations' && r.requested_model === 'nope'),
    );
  });

  test('edit refusals: no image, a file in an unknown part, a file over 64 MiB (413), not multipart (415)', async () => {
    const edit = async (form: FormData | string, headers: Record<string, string> = {}) => {
      const res = await fetch(`${rig.url}/v1/images/edits`, {
        method: 'POST',
        headers: { ...bearer(MASTER), ...headers },
        body: form,
      });
      return { status: res.status, body: (await res.json()) as { error: { param: string | null; code: string } } };
    };
    const form = (parts: Record<string, Blob | string>) => {
      const f = new FormData();
      for (const [k, v] of Object.entries(parts)) f.append(k, v);
      return f;
    };
    const png = new Blob([new Uint8Array(pngA)], { type: 'image/png' });
    const none = await edit(form({ model: 'inpaint', prompt: 'p' }));
    assert.equal(none.status, 400);
    assert.equal(none.body.error.param, 'image');
    const stray = await edit(form({ model: 'inpaint', prompt: 'p', image: png, extra: png }));
    assert.equal(stray.status, 400);
    assert.equal(stray.body.error.param, 'extra');
    const huge = await edit(
      form({
        model: 'inpaint',
        prompt: 'p',
        image: new Blob([new Uint8Array(64 * 1024 * 1024 + 1)], { type: 'image/png' }),
      }),
    );
    assert.equal(huge.status, 413);
    assert.equal(huge.body.error.param, 'image');
    const json = await edit(JSON.stringify({ model: 'inpaint' }), { 'content-type': 'application/json' });
    assert.equal(json.status, 415);
    const rows = rig.gw.gateway.callLog.recent({ status: 413 });
    assert.ok(rows.some((r) => r.endpoint === '/v1/images/edits' && r.backend === '(refused)'));
  });

  test('/v1/models?type=image lists the generation aliases, ?type=chat the rest, no type both', async () => {
    const list = async (query: string, key = MASTER) =>
      call<{ data: { id: string; type?: string; object: string; owned_by: string; backends?: string[] }[] }>(
        rig.url,
        'GET',
        `/v1/models${query}`,
        key,
      );
    const images = (await list('?type=image')).body.data;
    assert.deepEqual(images.map((m) => m.id).sort(), ['audio', 'inpaint', 'sd15', 'wan']);
    for (const m of images) {
      assert.equal(m.type, 'image');
      assert.equal(m.object, 'model');
      assert.equal(m.owned_by, 'llm-gateway');
    }
    assert.deepEqual(images.find((m) => m.id === 'inpaint')?.backends, ['edit']);
    assert.equal(
      (await list('?type=chat')).body.data.some((m) => m.type === 'image'),
      false,
    );
    assert.deepEqual(
      (await list('')).body.data
        .filter((m) => m.type === 'image')
        .map((m) => m.id)
        .sort(),
      ['audio', 'inpaint', 'sd15', 'wan'],
    );
    assert.equal((await list('?type=video')).status, 400);
    assert.equal((await call(rig.url, 'GET', '/v1/models/sd15', MASTER)).body.type, 'image');
  });

  test('an allow-list narrows the image models; with one left, `model` may be left out', async () => {
    const key = await createUser(rig.url, 'painter', { allow: ['sd15'] });
    const models = await call<{ data: { id: string }[] }>(rig.url, 'GET', '/v1/models?type=image', key);
    assert.deepEqual(
      models.body.data.map((m) => m.id),
      ['sd15'],
    );
    const own = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: key, maxRetries: 0 });
    const res = await own.images.generate({ prompt: 'no model named' });
    assert.ok(res.data?.[0].b64_json);
    const forbidden = await call(rig.url, 'POST', '/v1/images/generations', key, { model: 'wan', prompt: 'p' });
    assert.equal(forbidden.status, 404);
  });
});
