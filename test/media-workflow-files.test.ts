/**
 * A workflow file named in config.yaml keeps the big integers baked into it: read with the
 * exact parser (a bigint past 2^53), copied by the compiler and written digit for digit into
 * the prompt a real gateway queues on the fake ComfyUI.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { loadConfigFile } from '../src/config/load.ts';
import { formatProblems } from '../src/config/schema.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { fixturePath } from './helpers/fixtures.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { FAST_COMFY, settle, submitText } from './helpers/media-service.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const tempDir = tempDirs('llmgw-wf-');
const BIG = '9223372036854775807';

describe('workflow files with big integers', () => {
  let fake: ComfyFake | undefined;
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    await fake?.close();
    gw = undefined;
    fake = undefined;
  });

  test('a seed baked into the file reaches ComfyUI exactly', async () => {
    // the sd15 workflow with its seed primitive fixed (no `input_` title: the request does not set it) at 2^63−1
    const text = readFileSync(fixturePath('comfyui/workflows/txt2img_sd15_api.json'), 'utf8');
    const fixed = text
      .replace(/("69"\s*:\s*\{[\s\S]*?"value"\s*:\s*)-1/, `$1${BIG}`)
      .replace('"input_seed"', '"fixed_seed"');
    assert.notEqual(fixed, text);
    const dir = tempDir();
    writeFileSync(join(dir, 'sd15_fixed.json'), fixed);
    writeFileSync(
      join(dir, 'config.yaml'),
      `backends:
  - name: comfy
    url: http://127.0.0.1:1
    type: comfyui
image_models:
  fixed:
    - backend: comfy
      workflow: sd15_fixed.json
`,
    );
    const loaded = loadConfigFile(join(dir, 'config.yaml'), {});
    assert.ok(loaded.ok, loaded.ok ? '' : formatProblems(loaded.problems));
    const baked = (
      loaded.config.image_models.fixed[0].workflow_json as Record<string, { inputs: Record<string, unknown> }>
    )['69'].inputs.value;
    assert.equal(baked, BigInt(BIG), 'read exactly, as a bigint');

    fake = await startComfyFake();
    gw = await startGateway([{ name: 'comfy', url: fake.url, type: 'comfyui', ...FAST_COMFY }], {
      image_models: loaded.config.image_models,
    });
    const done = await settle(gw, (await submitText(gw, 'fixed')).id);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    const sent = fake.requests.find((r) => r.method === 'POST' && r.path === '/prompt')!;
    assert.match(
      sent.rawBody.toString('utf8'),
      new RegExp(`"69":\\{[^}]*"value":${BIG}\\b`),
      'the exact digits in the queued prompt',
    );
  });
});
