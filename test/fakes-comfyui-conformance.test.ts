/**
 * The fake ComfyUI against the real 0.27.0 captures in test/fixtures/comfyui/samples: every
 * response and websocket message the fake serves has the capture's JSON shape (assertSameShape:
 * every field the capture has, same JSON types; extra fields allowed). Fields the source shortened
 * (history `messages: ["..."]`, the `"1a37efff-..."` keys) are left out, as the fixtures README says.
 * The graph is ComfyUI's default txt2img (ids 3–9), the one the captures were recorded with.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertSameShape } from './fakes/shape.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { historyEntry, openComfyWs, submitPrompt, type ComfyWsMessage } from './fakes/comfyui-client.ts';
import { readFixture, readFixtureJson } from './helpers/fixtures.ts';
import { defaultWorkflow } from './fakes/comfyui-workflows.ts';

const S = 'comfyui/samples/';

function wsCapture(): Map<string, ComfyWsMessage> {
  const lines = readFixture(`${S}ws_messages_0.27.0.jsonl`)
    .split('\n')
    .filter((l) => l.trim() !== '');
  return new Map(
    lines.map((l) => {
      const m = JSON.parse(l);
      return [m.type, m];
    }),
  );
}

describe('fake ComfyUI matches the real 0.27.0 captures', () => {
  let fake: ComfyFake;
  before(async () => {
    fake = await startComfyFake({ knobs: { stepMs: 2, steps: 3 } });
  });
  after(() => fake.close());

  test('POST /prompt 200 has the shape of prompt_response_ok.json', async () => {
    const r = await submitPrompt(fake, defaultWorkflow('ok shape'), { client_id: 'conf-ok' });
    assert.equal(r.status, 200);
    assertSameShape(r.body, readFixtureJson(`${S}prompt_response_ok.json`));
    assert.deepEqual(r.body.node_errors, {});
    await historyEntry(fake, r.body.prompt_id);
  });

  test('POST /prompt 400 has the shape of prompt_response_400_validation.json, error by error', async () => {
    // The capture's mistake: SaveImage "9" fed the MODEL output of "4", and no filename_prefix.
    const prompt = { '4': defaultWorkflow()['4'], '9': { class_type: 'SaveImage', inputs: { images: ['4', 0] } } };
    const r = await submitPrompt(fake, prompt);
    const real = readFixtureJson<any>(`${S}prompt_response_400_validation.json`);
    assert.equal(r.status, 400);
    assertSameShape(r.body, real);
    assert.equal(r.body.error.type, real.error.type);
    assert.equal(r.body.error.message, real.error.message);
    assert.equal(r.body.error.details, real.error.details, 'details: the per-input messages joined with \\n');
    assert.deepEqual(
      r.body.node_errors['9'].errors.map((e: any) => e.type),
      real.node_errors['9'].errors.map((e: any) => e.type),
    );
    real.node_errors['9'].errors.forEach((e: any, i: number) => {
      assertSameShape(r.body.node_errors['9'].errors[i], e);
      assert.equal(r.body.node_errors['9'].errors[i].details, e.details);
    });
    assert.deepEqual(r.body.node_errors['9'].dependent_outputs, ['9']);
  });

  test('GET /queue empty is queue_empty.json; busy items are the 5-element arrays of api-notes §3', async () => {
    const real = readFixtureJson(`${S}queue_empty.json`);
    const empty = await (await fetch(`${fake.url}/queue`)).json();
    assert.deepEqual(empty, real);
    fake.setKnobs({ stuck: true });
    try {
      const a = await submitPrompt(fake, defaultWorkflow('queued a'), { client_id: 'conf-q' });
      const busy: any = await (await fetch(`${fake.url}/api/queue`)).json();
      assertSameShape(busy, real);
      assert.equal(busy.queue_pending.length, 1);
      const [num, id, graph, extra, outputs] = busy.queue_pending[0];
      assert.equal(busy.queue_pending[0].length, 5);
      assert.equal(typeof num, 'number');
      assert.equal(id, a.body.prompt_id);
      assert.equal(graph['9'].class_type, 'SaveImage');
      assert.equal(extra.client_id, 'conf-q');
      assert.equal(typeof extra.create_time, 'number');
      assert.deepEqual(outputs, ['9']);
      fake.setKnobs({ stuck: false });
      await historyEntry(fake, a.body.prompt_id);
    } finally {
      fake.setKnobs({ stuck: false });
    }
  });

  test('GET /system_stats has the shape of the capture (device index: CUDA 0, where MPS says null)', async () => {
    const stats = await (await fetch(`${fake.url}/system_stats`)).json();
    assertSameShape(stats, readFixtureJson(`${S}system_stats_0.27.0.json`), '$', { ignore: ['$.devices[0].index'] });
    assert.equal((stats as any).system.comfyui_version, '0.27.0');
  });

  test('GET /features is the capture', async () => {
    assert.deepEqual(await (await fetch(`${fake.url}/features`)).json(), readFixtureJson(`${S}features_0.27.0.json`));
  });

  test('a /history entry has the outputs and status shape of the capture, plus prompt and meta (api-notes §5)', async () => {
    const r = await submitPrompt(fake, defaultWorkflow('history shape'), { client_id: 'conf-h' });
    const entry = await historyEntry(fake, r.body.prompt_id);
    const real = Object.values(readFixtureJson<Record<string, any>>(`${S}history_abridged_0.27.0.json`))[0];
    assertSameShape(entry, real, '$', { ignore: ['$.status.messages'] });
    assert.deepEqual(Object.keys(entry.outputs), ['9']);
    assert.equal(entry.outputs['9'].images[0].type, 'output');
    assert.match(entry.outputs['9'].images[0].filename, /^komfy_apitest_\d{5}_\.png$/);
    assert.deepEqual(
      entry.status.messages.map((m: any) => m[0]),
      ['execution_start', 'execution_cached', 'execution_success'],
    );
    for (const [, data] of entry.status.messages) assert.equal(typeof data.timestamp, 'number');
    assert.equal(entry.prompt.length, 5);
    assert.equal(entry.prompt[1], r.body.prompt_id);
    assert.deepEqual(entry.meta['9'], { node_id: '9', display_node: '9', parent_node: null, real_node_id: '9' });
  });

  test('every websocket message type has the shape of its line in ws_messages_0.27.0.jsonl', async () => {
    const real = wsCapture();
    // Empty the execution cache, so the loader "4" runs again (the capture's execution_cached is []).
    await fetch(`${fake.url}/free`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ unload_models: true, free_memory: true }),
    });
    const ws = await openComfyWs(fake, 'conf-ws');
    try {
      const ok = await submitPrompt(fake, defaultWorkflow('ws shapes', 7), { client_id: 'conf-ws' });
      await ws.next((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === ok.body.prompt_id);
      fake.setKnobs({ failNode: '9' });
      const bad = await submitPrompt(fake, defaultWorkflow('ws error', 8), { client_id: 'conf-ws' });
      await ws.next((m) => m.type === 'execution_error' && m.data.prompt_id === bad.body.prompt_id);
      fake.setKnobs({ failNode: undefined });
      const ours = ws.messages;
      const covered: string[] = [];
      for (const [type, capture] of real) {
        if (type === 'crystools.monitor') continue; // a custom node's message, not ComfyUI's
        let candidates = ours.filter((m) => m.type === type);
        if (type === 'status') candidates = candidates.filter((m) => 'sid' in m.data);
        if (type === 'progress_state')
          candidates = candidates.filter((m) => Object.hasOwn(m.data.nodes, Object.keys(capture.data.nodes)[0]!));
        if (type === 'executing') candidates = candidates.filter((m) => m.data.node !== null);
        if (type === 'executed') candidates = candidates.filter((m) => m.data.node === capture.data.node);
        assert.ok(candidates.length > 0, `the fake sent no ${type} message like the capture's`);
        for (const m of candidates) assertSameShape(m, capture);
        covered.push(type);
      }
      assert.deepEqual(covered.sort(), [
        'executed',
        'executing',
        'execution_cached',
        'execution_error',
        'execution_start',
        'execution_success',
        'progress',
        'progress_state',
        'status',
      ]);
      // The end of a prompt: {node: null, prompt_id} (api-notes §10).
      const end = ours.find((m) => m.type === 'executing' && m.data.node === null)!;
      assert.deepEqual(Object.keys(end.data).sort(), ['node', 'prompt_id']);
    } finally {
      await ws.close();
    }
  });
});
