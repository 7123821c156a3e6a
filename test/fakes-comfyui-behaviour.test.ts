/**
 * The fake ComfyUI behaves like ComfyUI: real fixture workflows run to completion over the
 * websocket, /history then has their outputs and /view serves the files; validation answers as
 * execution.py does; uploads, caching, previews and client-id routing work as api-notes.md says.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import { startComfyFake } from './fakes/comfyui-server.ts';
import { FAKE_CUSTOM_NODE_INFO } from './fakes/comfyui-nodes.ts';
import { PNG_SIGNATURE, fakePng } from './fakes/comfyui-media.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import {
  historyEntry,
  openComfyWs,
  postJson,
  submitPrompt,
  uploadImage,
  type ComfyWsMessage,
} from './fakes/comfyui-client.ts';
import { readFixtureJson } from './helpers/fixtures.ts';
import { defaultWorkflow, loadImageWorkflow } from './fakes/comfyui-workflows.ts';

const wf = (name: string) => readFixtureJson<Record<string, any>>(`comfyui/workflows/${name}`);

/** The files a history entry's outputs name (every list-valued key, every dict with filename). */
function filesOf(entry: any): Array<{ filename: string; subfolder: string; type: string }> {
  return Object.values(entry.outputs).flatMap((ui: any) =>
    Object.values(ui).flatMap((v: any) =>
      Array.isArray(v) ? v.filter((x) => x && typeof x === 'object' && 'filename' in x) : [],
    ),
  );
}

async function view(fake: ComfyFake, f: { filename: string; subfolder: string; type: string }): Promise<Response> {
  return fetch(
    `${fake.url}/view?${new URLSearchParams({ filename: f.filename, subfolder: f.subfolder, type: f.type })}`,
  );
}

/** Decodes our PNG enough to prove it is one: signature, IHDR, IDAT inflates to the right size. */
function assertPng(buf: Buffer): void {
  assert.ok(buf.subarray(0, 8).equals(PNG_SIGNATURE), 'PNG signature');
  assert.equal(buf.subarray(12, 16).toString('latin1'), 'IHDR');
  const w = buf.readUInt32BE(16),
    h = buf.readUInt32BE(20);
  let pos = 8;
  const idat: Buffer[] = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.subarray(pos + 4, pos + 8).toString('latin1');
    if (type === 'IDAT') idat.push(buf.subarray(pos + 8, pos + 8 + len));
    pos += 12 + len;
  }
  assert.equal(inflateSync(Buffer.concat(idat)).length, (w * 3 + 1) * h);
}

/** Order rules of one prompt's messages on its client's socket (api-notes §10). */
function assertRunOrder(msgs: ComfyWsMessage[], outcome: string): void {
  const types = msgs.map((m) => m.type);
  assert.equal(types[0], 'execution_start');
  assert.equal(types[1], 'execution_cached');
  assert.equal(types.at(-1), 'executing');
  assert.equal(msgs.at(-1)!.data.node, null);
  assert.equal(types.at(-2), outcome);
  // every executing node has its progress_state 'running' just before
  msgs.forEach((m, i) => {
    if (m.type === 'executing' && m.data.node !== null) {
      const prev = msgs[i - 1]!;
      assert.equal(prev.type, 'progress_state');
      assert.equal(prev.data.nodes[m.data.node].state, 'running');
    }
  });
}

describe('fake ComfyUI: fixture workflows end to end', () => {
  let fake: ComfyFake;
  before(async () => {
    fake = await startComfyFake();
  });
  after(() => fake.close());

  test('txt2img_sd15 (rgthree LoRA stack, PreviewImage): websocket to the end, /history, /view', async () => {
    const ws = await openComfyWs(fake, 'sd15-client');
    try {
      const status = await ws.next((m) => m.type === 'status');
      assert.equal(status.data.sid, 'sd15-client');
      assert.deepEqual(fake.wsClients(), ['sd15-client']);
      const prompt = wf('txt2img_sd15_api.json');
      prompt['61'].inputs.value = 'a red fox in the snow';
      const r = await submitPrompt(fake, prompt, { client_id: 'sd15-client' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const id = r.body.prompt_id;
      const end = await ws.next((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === id);
      assert.ok(end);
      const msgs = ws.ofPrompt(id);
      assertRunOrder(msgs, 'execution_success');
      const progress = msgs.filter((m) => m.type === 'progress');
      assert.deepEqual(
        progress.map((m) => m.data.value),
        [1, 2, 3, 4],
        'steps knob: 4 steps of the KSampler',
      );
      assert.ok(progress.every((m) => m.data.node === '310' && m.data.max === 4));
      const executedNodes = msgs.filter((m) => m.type === 'executing' && m.data.node !== null).map((m) => m.data.node);
      assert.deepEqual(new Set(executedNodes), new Set(Object.keys(prompt)));
      assert.ok(
        executedNodes.indexOf('312') < executedNodes.indexOf('313') &&
          executedNodes.indexOf('310') < executedNodes.indexOf('124'),
        'inputs before their users',
      );
      const executed = msgs.find((m) => m.type === 'executed')!;
      assert.equal(executed.data.node, '10');
      assert.equal(executed.data.output.images[0].type, 'temp', 'PreviewImage writes to temp');
      // a queue status after the end (queue_remaining 0)
      await ws.next(
        (m) =>
          m.type === 'status' &&
          m.data.status.exec_info.queue_remaining === 0 &&
          ws.messages.indexOf(m) > ws.messages.indexOf(end),
      );

      const entry = await historyEntry(fake, id);
      assert.equal(entry.status.status_str, 'success');
      assert.equal(entry.status.completed, true);
      assert.deepEqual(entry.outputs['10'], executed.data.output);
      const [file] = filesOf(entry);
      const res = await view(fake, file!);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.match(res.headers.get('content-disposition') ?? '', /filename="ComfyUI_temp_/);
      assertPng(Buffer.from(await res.arrayBuffer()));
      const all: any = await (await fetch(`${fake.url}/api/history`)).json();
      assert.ok(all[id], 'GET /history lists it too');
      assert.equal(fake.prompts.find((p) => p.id === id)!.status, 'success');
    } finally {
      await ws.close();
    }
  });

  test('different inputs give different bytes; SaveVideo / SaveAudio write mp4 / flac with the right magic', async () => {
    const a = defaultWorkflow('one', 1),
      b = defaultWorkflow('two', 1);
    const ra = await submitPrompt(fake, a),
      rb = await submitPrompt(fake, b);
    const [fa] = filesOf(await historyEntry(fake, ra.body.prompt_id));
    const [fb] = filesOf(await historyEntry(fake, rb.body.prompt_id));
    assert.notEqual(fa!.filename, fb!.filename, 'the SaveImage counter goes up');
    const ba = Buffer.from(await (await view(fake, fa!)).arrayBuffer()),
      bb = Buffer.from(await (await view(fake, fb!)).arrayBuffer());
    assertPng(ba);
    assertPng(bb);
    assert.ok(!ba.equals(bb));

    const video = await submitPrompt(fake, wf('img2video_wan_lowram_api.json')); // LoadImage example.png: shipped with ComfyUI
    assert.equal(video.status, 200, JSON.stringify(video.body));
    const ve = await historyEntry(fake, video.body.prompt_id);
    assert.equal(ve.status.status_str, 'success');
    const [vf] = filesOf(ve);
    assert.equal(vf!.subfolder, 'video');
    assert.match(vf!.filename, /^Wan2\.2_i2v_00001_\.mp4$/);
    assert.deepEqual(ve.outputs['108'].animated, [true]);
    const vb = Buffer.from(await (await view(fake, vf!)).arrayBuffer());
    assert.equal(vb.subarray(4, 8).toString('latin1'), 'ftyp');

    const audio = await submitPrompt(fake, wf('stable_audio_open_api.json'));
    assert.equal(audio.status, 200, JSON.stringify(audio.body));
    const ae = await historyEntry(fake, audio.body.prompt_id);
    assert.deepEqual(Object.keys(ae.outputs['13']), ['audio']);
    const [af] = filesOf(ae);
    assert.equal(af!.subfolder, 'audio');
    const ab = Buffer.from(await (await view(fake, af!)).arrayBuffer());
    assert.equal(ab.subarray(0, 4).toString('latin1'), 'fLaC');
  });

  test('SaveGLB writes a GLB; flux_lora_chain (no _meta) runs', async () => {
    const mesh = {
      '1': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd_xl_base_1.0.safetensors' } },
      '2': { class_type: 'EmptyLatentHunyuan3Dv2', inputs: { resolution: 3072, batch_size: 1 } },
      '3': {
        class_type: 'VAEDecodeHunyuan3D',
        inputs: { samples: ['2', 0], vae: ['1', 2], num_chunks: 8000, octree_resolution: 256 },
      },
      '4': { class_type: 'VoxelToMesh', inputs: { voxel: ['3', 0], algorithm: 'surface net', threshold: 0.6 } },
      '5': { class_type: 'SaveGLB', inputs: { mesh: ['4', 0], filename_prefix: 'mesh/ComfyUI' } },
    };
    const r = await submitPrompt(fake, mesh);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const e = await historyEntry(fake, r.body.prompt_id);
    const [f] = filesOf(e);
    assert.ok(e.outputs['5']['3d'], 'SaveGLB ui key is "3d"');
    const b = Buffer.from(await (await view(fake, f!)).arrayBuffer());
    assert.equal(b.subarray(0, 4).toString('latin1'), 'glTF');
    assert.equal(b.readUInt32LE(8), b.length);

    const flux = await submitPrompt(fake, wf('flux_lora_chain_api.json'));
    assert.equal(flux.status, 200, JSON.stringify(flux.body));
    assert.equal((await historyEntry(fake, flux.body.prompt_id)).status.status_str, 'success');
  });

  test('the base-install object_info dump: rgthree is missing_node_type; with the fake custom nodes it validates', async () => {
    const real = readFixtureJson<Record<string, any>>('comfyui/object_info.json');
    const strict = await startComfyFake({ objectInfo: real });
    try {
      const r = await submitPrompt(strict, wf('txt2img_sd15_api.json'));
      assert.equal(r.status, 400);
      assert.deepEqual(r.body.node_errors, {});
      assert.equal(r.body.error.type, 'missing_node_type');
      assert.equal(r.body.error.message, "Node 'input_lora' not found. The custom node may not be installed.");
      assert.deepEqual(r.body.error.extra_info, {
        node_id: '313',
        class_type: 'Lora Loader Stack (rgthree)',
        node_title: 'input_lora',
      });
      strict.setKnobs({ legacyMissingNode: true });
      const legacy = await submitPrompt(strict, wf('txt2img_sd15_api.json'));
      assert.equal(legacy.body.error.type, 'invalid_prompt');
      assert.deepEqual(legacy.body.node_errors, {});
    } finally {
      await strict.close();
    }
    const merged = await startComfyFake({ objectInfo: { ...real, ...FAKE_CUSTOM_NODE_INFO } });
    try {
      // The dump's install has no SD15-Cyberrealistic checkpoint: a missing model is value_not_in_list.
      const r = await submitPrompt(merged, wf('txt2img_sd15_api.json'));
      assert.equal(r.status, 400);
      assert.equal(r.body.error.type, 'prompt_outputs_failed_validation');
      const reasons = Object.values(r.body.node_errors).flatMap((n: any) => n.errors);
      assert.ok(
        reasons.some((e: any) => e.type === 'value_not_in_list' && e.extra_info.input_name === 'ckpt_name'),
        JSON.stringify(r.body),
      );
      merged.setKnobs({ validateCombos: false });
      const ok = await submitPrompt(merged, wf('txt2img_sd15_api.json'));
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal((await historyEntry(merged, ok.body.prompt_id)).status.status_str, 'success');
    } finally {
      await merged.close();
    }
  });
});

describe('fake ComfyUI: validation, uploads, routing', () => {
  let fake: ComfyFake;
  before(async () => {
    fake = await startComfyFake({ knobs: { stepMs: 2 } });
  });
  after(() => fake.close());

  test('prompt_no_outputs, no_prompt, invalid_prompt_id', async () => {
    const noOut = await submitPrompt(fake, { '4': defaultWorkflow()['4'] });
    assert.equal(noOut.status, 400);
    assert.deepEqual(noOut.body, {
      error: { type: 'prompt_no_outputs', message: 'Prompt has no outputs', details: '', extra_info: {} },
      node_errors: {},
    });
    const none = await postJson(fake, '/prompt', { client_id: 'x' });
    assert.equal(none.status, 400);
    assert.equal(((await none.json()) as any).error.type, 'no_prompt');
    const badId = await submitPrompt(fake, defaultWorkflow(), { prompt_id: 'NOT-A-UUID' });
    assert.equal(badId.status, 400);
    assert.equal(badId.body.error.type, 'invalid_prompt_id');
    const mine = '0f2c7c57-3a43-4c8e-9c1c-1f0e8d2a9b11';
    const chosen = await submitPrompt(fake, defaultWorkflow('chosen id'), { prompt_id: mine });
    assert.equal(chosen.body.prompt_id, mine);
    await historyEntry(fake, mine);
  });

  test('a missing required input, a link to a node that does not exist, a value out of range', async () => {
    const missing = defaultWorkflow();
    delete missing['3'].inputs.seed;
    const r1 = await submitPrompt(fake, missing);
    assert.equal(r1.status, 400);
    assert.equal(r1.body.error.type, 'prompt_outputs_failed_validation');
    assert.deepEqual(Object.keys(r1.body.node_errors), ['3'], 'the error sits on the node that lacks the input');
    assert.deepEqual(r1.body.node_errors['3'], {
      errors: [
        {
          type: 'required_input_missing',
          message: 'Required input is missing',
          details: 'seed',
          extra_info: { input_name: 'seed' },
        },
      ],
      dependent_outputs: ['9'],
    });

    const dangling = defaultWorkflow();
    dangling['8'].inputs.vae = ['99', 2];
    const r2 = await submitPrompt(fake, dangling);
    assert.equal(r2.status, 400);
    assert.equal(r2.body.node_errors['8'].errors[0].type, 'exception_during_inner_validation');
    assert.equal(r2.body.node_errors['8'].errors[0].details, "'99'");
    assert.equal(r2.body.node_errors['8'].errors[0].extra_info.exception_type, 'KeyError');

    const onOutput = defaultWorkflow();
    onOutput['9'].inputs.images = ['77', 0];
    const r3 = await submitPrompt(fake, onOutput);
    assert.equal(r3.body.node_errors['9'].errors[0].type, 'exception_during_validation');

    const range = defaultWorkflow();
    range['5'].inputs.width = 8;
    const r4 = await submitPrompt(fake, range);
    assert.equal(r4.body.node_errors['5'].errors[0].type, 'value_smaller_than_min');
    assert.equal(r4.body.error.details, '', "only the outputs' own reasons are joined into details");
  });

  test('a 200 can carry node_errors: one output fails, the other runs', async () => {
    const p = defaultWorkflow('two outputs');
    p['10'] = { class_type: 'SaveImage', inputs: { images: ['8', 0] } }; // no filename_prefix
    const r = await submitPrompt(fake, p);
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body.node_errors), ['10']);
    const e = await historyEntry(fake, r.body.prompt_id);
    assert.deepEqual(Object.keys(e.outputs), ['9']);
    assert.deepEqual(e.prompt[4], ['9']);
  });

  test('uploads: stored, renamed when the content differs, reused when equal, overwritten on request; /view of inputs', async () => {
    const a = fakePng('upload-a'),
      b = fakePng('upload-b');
    const r1 = await uploadImage(fake, 'ref.png', a);
    assert.deepEqual(r1, { status: 200, body: { name: 'ref.png', subfolder: '', type: 'input' } });
    const r2 = await uploadImage(fake, 'ref.png', a);
    assert.equal(r2.body.name, 'ref.png', 'same bytes: the same name');
    const r3 = await uploadImage(fake, 'ref.png', b);
    assert.equal(r3.body.name, 'ref (1).png');
    const r4 = await uploadImage(fake, 'ref.png', b, { overwrite: 'true' });
    assert.equal(r4.body.name, 'ref.png');
    assert.ok(fake.uploads.get('ref.png')!.equals(b));
    const r5 = await uploadImage(fake, 'sub.png', a, { subfolder: 'gw', type: 'input' });
    assert.deepEqual(r5.body, { name: 'sub.png', subfolder: 'gw', type: 'input' });
    assert.ok(fake.uploads.has('gw/sub.png'));
    const got = await fetch(`${fake.url}/view?filename=ref.png&type=input`);
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(b));
    const annotated = await fetch(`${fake.url}/view?filename=${encodeURIComponent('ref.png [input]')}`);
    assert.equal(annotated.status, 200);
    assert.equal((await fetch(`${fake.url}/view?filename=nope.png&type=input`)).status, 404);
    assert.equal((await fetch(`${fake.url}/view?filename=..%2Fetc.png`)).status, 400);
    const noImage = await fetch(`${fake.url}/upload/image`, { method: 'POST', body: new FormData() });
    assert.equal(noImage.status, 400);
    const info: any = await (await fetch(`${fake.url}/object_info/LoadImage`)).json();
    assert.ok(
      info.LoadImage.input.required.image[0].includes('ref (1).png'),
      'the LoadImage combo lists the input folder',
    );
    assert.deepEqual(await (await fetch(`${fake.url}/object_info/NoSuchNode`)).json(), {});

    // A LoadImage of an uploaded file runs; the recorded request shows the multipart fields.
    const p = loadImageWorkflow('gw/sub.png');
    const run = await submitPrompt(fake, p);
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal((await historyEntry(fake, run.body.prompt_id)).status.status_str, 'success');
    const rec = fake.requests.find((q) => q.path === '/upload/image' && (q.body as any)?.fields?.subfolder === 'gw');
    assert.deepEqual((rec!.body as any).files.image, { filename: 'sub.png', size: a.length });
  });

  test('client-id routing: a second client sees only status; no client_id means progress goes to everyone', async () => {
    const mine = await openComfyWs(fake, 'owner');
    const other = await openComfyWs(fake, 'bystander');
    try {
      const r = await submitPrompt(fake, defaultWorkflow('routing'), { client_id: 'owner' });
      await mine.next((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === r.body.prompt_id);
      await other.next(
        (m) => m.type === 'status' && m.data.status.exec_info.queue_remaining === 0 && other.messages.length > 2,
      );
      assert.deepEqual([...new Set(other.messages.map((m) => m.type))], ['status']);
      assert.ok(mine.messages.some((m) => m.type === 'executed'));

      const anon = await submitPrompt(fake, defaultWorkflow('anonymous'));
      await historyEntry(fake, anon.body.prompt_id);
      await other.next((m) => m.type === 'progress' && m.data.prompt_id === anon.body.prompt_id);
      const seen = new Set(other.messages.filter((m) => m.data?.prompt_id === anon.body.prompt_id).map((m) => m.type));
      assert.deepEqual(
        [...seen].sort(),
        ['progress', 'progress_state'],
        'sid=None broadcasts only progress and progress_state',
      );
    } finally {
      await mine.close();
      await other.close();
    }
  });

  test('execution cache: the same prompt again is all cached and re-sends executed', async () => {
    const ws = await openComfyWs(fake, 'cache-client');
    try {
      const p = defaultWorkflow('cache me', 1234);
      const first = await submitPrompt(fake, p, { client_id: 'cache-client' });
      const e1 = await historyEntry(fake, first.body.prompt_id);
      const second = await submitPrompt(fake, p, { client_id: 'cache-client' });
      const e2 = await historyEntry(fake, second.body.prompt_id);
      const msgs = ws.ofPrompt(second.body.prompt_id);
      const cached = msgs.find((m) => m.type === 'execution_cached')!;
      assert.deepEqual([...cached.data.nodes].sort(), Object.keys(p).sort());
      assert.equal(msgs.filter((m) => m.type === 'progress').length, 0);
      assert.ok(msgs.some((m) => m.type === 'executed' && m.data.node === '9'));
      assert.deepEqual(e2.outputs, e1.outputs);
      // LoadImage's IS_CHANGED is the file hash: replacing the upload runs it again.
      await uploadImage(fake, 'cached.png', fakePng('v1'), { overwrite: 'true' });
      const l1 = await submitPrompt(fake, loadImageWorkflow('cached.png'), { client_id: 'cache-client' });
      await historyEntry(fake, l1.body.prompt_id);
      const l2 = await submitPrompt(fake, loadImageWorkflow('cached.png'), { client_id: 'cache-client' });
      await historyEntry(fake, l2.body.prompt_id);
      await uploadImage(fake, 'cached.png', fakePng('v2'), { overwrite: 'true' });
      const l3 = await submitPrompt(fake, loadImageWorkflow('cached.png'), { client_id: 'cache-client' });
      await historyEntry(fake, l3.body.prompt_id);
      const cachedOf = (id: string) => ws.ofPrompt(id).find((m) => m.type === 'execution_cached')!.data.nodes;
      assert.deepEqual([...cachedOf(l2.body.prompt_id)].sort(), ['1', '2']);
      assert.deepEqual(cachedOf(l3.body.prompt_id), []);
    } finally {
      await ws.close();
    }
  });

  test('previews: binary type 1 + PNG frames, or type 4 with metadata when the client asks', async () => {
    fake.setKnobs({ previews: true, steps: 3 });
    const plain = await openComfyWs(fake, 'pv-plain');
    const meta = await openComfyWs(fake, 'pv-meta', { featureFlags: { supports_preview_metadata: true } });
    try {
      await meta.next((m) => m.type === 'feature_flags');
      const r1 = await submitPrompt(fake, defaultWorkflow('preview plain', 5), { client_id: 'pv-plain' });
      await plain.next((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === r1.body.prompt_id);
      assert.equal(plain.binary.length, 3);
      for (const f of plain.binary) {
        assert.equal(f.readUInt32BE(0), 1);
        assert.equal(f.readUInt32BE(4), 2);
        assertPng(f.subarray(8));
      }
      const r2 = await submitPrompt(fake, defaultWorkflow('preview meta', 6), { client_id: 'pv-meta' });
      await meta.next((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === r2.body.prompt_id);
      assert.equal(meta.binary.length, 3);
      const f = meta.binary[0]!;
      assert.equal(f.readUInt32BE(0), 4);
      const len = f.readUInt32BE(4);
      const m = JSON.parse(f.subarray(8, 8 + len).toString('utf8'));
      assert.equal(m.prompt_id, r2.body.prompt_id);
      assert.equal(m.node_id, '3');
      assert.equal(m.image_type, 'image/png');
      assertPng(f.subarray(8 + len));
    } finally {
      fake.setKnobs({ previews: false, steps: 4 });
      await plain.close();
      await meta.close();
    }
  });

  test('/api prefix, /prompt exec_info, /models, 404s', async () => {
    assert.deepEqual(await (await fetch(`${fake.url}/api/prompt`)).json(), { exec_info: { queue_remaining: 0 } });
    assert.ok(((await (await fetch(`${fake.url}/models`)).json()) as string[]).includes('checkpoints'));
    assert.equal((await fetch(`${fake.url}/models/nope`)).status, 404);
    assert.equal((await fetch(`${fake.url}/nope`)).status, 404);
    const ws = await openComfyWs(fake, 'api-ws', { path: '/api/ws' });
    await ws.next((m) => m.type === 'status');
    await ws.close();
  });
});
