/**
 * The size bounds of a generation, over sockets on a fake ComfyUI (the real `openai` SDK for
 * the Images API): width × height at most the alias's `max_pixels` (default 4 MiP), the batch
 * (`n`) from 1 to its `max_n` (default 10), no zero or negative dimension; each refusal a 400
 * naming the param the request set, before anything reaches a box.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIError } from 'openai';
import { parseConfigText } from '../src/config/load.ts';
import type { JobView } from '../src/media/service-types.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import { call, imageModels, MASTER, startMediaRig, type MediaRig } from './helpers/media-gateway.ts';

type Answer = { error?: { code?: string; param?: string; message?: string } } & Partial<JobView>;

describe('media size bounds', () => {
  let rig: MediaRig;
  let client: OpenAI;

  before(async () => {
    rig = await startMediaRig({
      overrides: {
        image_models: {
          ...imageModels(),
          small: [
            {
              backend: 'comfy',
              workflow_json: workflow('txt2img_sd15_api.json'),
              max_pixels: 512 * 512,
              max_n: 2,
            },
          ],
        },
      },
    });
    client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: MASTER, maxRetries: 0 });
  });
  after(async () => rig?.close());

  const generate = (body: unknown) => call<Answer>(rig.url, 'POST', '/v1/generations', MASTER, body);
  const refusal = async (params: OpenAI.ImageGenerateParamsNonStreaming) => {
    const err = await client.images.generate(params).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof APIError, `refused: ${String(err)}`);
    return { status: err.status, ...(err.error as { param?: string; message?: string }) };
  };

  test('images.generate with size 99999x99999 or 2049x2048: 400 naming `size`, nothing sent to the box', async () => {
    const before = rig.comfy.prompts.length;
    const huge = await refusal({ model: 'sd15', prompt: 'p', size: '99999x99999' as never });
    assert.equal(huge.status, 400);
    assert.equal(huge.param, 'size');
    assert.match(huge.message ?? '', /4,194,304/);
    const over = await refusal({ model: 'sd15', prompt: 'p', size: '2049x2048' as never });
    assert.equal(over.status, 400);
    assert.equal(over.param, 'size');
    assert.equal(rig.comfy.prompts.length, before);
  });

  test('a zero or negative width or height is a 400 naming it', async () => {
    const before = rig.comfy.prompts.length;
    const cases = [
      [{ width: -64 }, 'width'],
      [{ height: 0 }, 'height'],
      [{ width: -8, height: 512 }, 'width'],
    ] as const;
    for (const [params, param] of cases) {
      const r = await generate({ model: 'sd15', prompt: 'p', params });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error?.param, param, JSON.stringify(r.body));
    }
    assert.equal(rig.comfy.prompts.length, before);
  });

  test('the native `n` is bounded by max_n (default 10): 4096 and 0 are refused naming `n`', async () => {
    for (const n of [4096, 11, 0, -1]) {
      const r = await generate({ model: 'sd15', prompt: 'p', params: { n } });
      assert.equal(r.status, 400, `n=${n}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error?.param, 'n', `n=${n}: ${JSON.stringify(r.body)}`);
    }
    const batch = await generate({ model: 'sd15', prompt: 'p', params: { batch: 4096 } });
    assert.equal(batch.status, 400);
    assert.equal(batch.body.error?.param, 'batch');
  });

  test("an alias's own max_pixels and max_n: 512x512 and n 2 run, 513x512 and n 3 are refused", async () => {
    const ok = await generate({ model: 'small', prompt: 'p', params: { size: '512x512', n: 2 } });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.status, 'done');
    const wide = await generate({ model: 'small', prompt: 'p', params: { width: 513, height: 512 } });
    assert.equal(wide.status, 400);
    assert.equal(wide.body.error?.param, 'width');
    assert.match(wide.body.error?.message ?? '', /262,144 \(max_pixels\)/);
    const many = await refusal({ model: 'small', prompt: 'p', n: 3, size: '256x256' });
    assert.equal(many.status, 400);
    assert.equal(many.param, 'n');
  });

  test('an invalid max_pixels or max_n is a config error naming its key', () => {
    const result = parseConfigText(
      [
        'backends: [{name: comfy, url: "http://127.0.0.1:8188", type: comfyui}]',
        'image_models:',
        '  tiny:',
        '    - {backend: comfy, workflow_json: {"1": {class_type: SaveImage, inputs: {}}}, max_pixels: 0, max_n: 2.5}',
      ].join('\n'),
      {},
    );
    assert.equal(result.ok, false);
    const paths = result.ok ? [] : result.problems.map((p) => p.path);
    assert.ok(paths.includes('image_models.tiny[0].max_pixels'), paths.join(', '));
    assert.ok(paths.includes('image_models.tiny[0].max_n'), paths.join(', '));
  });
});
