/**
 * The fake ComfyUI's queue and its faults: one prompt at a time in FIFO order, interrupts (global
 * and targeted), a missing upload, a failing node, stuck mode, restarts (refused and 503), refuse
 * and latency.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake, ComfyKnobs } from './fakes/comfyui-types.ts';
import { historyEntry, openComfyWs, postJson, submitPrompt } from './fakes/comfyui-client.ts';
import { defaultWorkflow, loadImageWorkflow } from './fakes/comfyui-workflows.ts';
import { waitFor } from './helpers/wait.ts';

async function withComfy(knobs: Partial<ComfyKnobs>, fn: (f: ComfyFake) => Promise<void>): Promise<void> {
  const fake = await startComfyFake({ knobs });
  try {
    await fn(fake);
  } finally {
    await fake.close();
  }
}

const queue = async (f: ComfyFake): Promise<any> => (await fetch(`${f.url}/queue`)).json();

describe('fake ComfyUI: queue and faults', () => {
  test('one prompt at a time, FIFO; /queue shows one running and the rest pending', () =>
    withComfy({ stepMs: 20, steps: 10 }, async (fake) => {
      const ws = await openComfyWs(fake, 'fifo');
      try {
        const a = await submitPrompt(fake, defaultWorkflow('first'), { client_id: 'fifo' });
        const b = await submitPrompt(fake, defaultWorkflow('second'), { client_id: 'fifo' });
        assert.equal(b.body.number, a.body.number + 1);
        await ws.next((m) => m.type === 'progress' && m.data.prompt_id === a.body.prompt_id);
        const q = await queue(fake);
        assert.deepEqual(
          q.queue_running.map((i: any) => i[1]),
          [a.body.prompt_id],
        );
        assert.deepEqual(
          q.queue_pending.map((i: any) => i[1]),
          [b.body.prompt_id],
        );
        assert.deepEqual(
          await (await fetch(`${fake.url}/history/${a.body.prompt_id}`)).json(),
          {},
          'no history entry while it runs',
        );
        await ws.next((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === b.body.prompt_id);
        const endA = ws.messages.findIndex(
          (m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === a.body.prompt_id,
        );
        const startB = ws.messages.findIndex(
          (m) => m.type === 'execution_start' && m.data.prompt_id === b.body.prompt_id,
        );
        assert.ok(endA >= 0 && startB > endA, 'B starts only after A ended');
        const ids = ws.messages.filter((m) => m.type !== 'status' && m.data?.prompt_id).map((m) => m.data.prompt_id);
        const firstB = ids.indexOf(b.body.prompt_id);
        assert.ok(
          ids.slice(firstB).every((id) => id === b.body.prompt_id),
          'no interleaving',
        );
        // front: true jumps the queue
        fake.setKnobs({ stuck: true });
        const c = await submitPrompt(fake, defaultWorkflow('third'));
        const d = await submitPrompt(fake, defaultWorkflow('fourth'), { front: true });
        assert.ok(d.body.number < c.body.number);
        fake.setKnobs({ stuck: false });
        const ed = await historyEntry(fake, d.body.prompt_id);
        const ec = await historyEntry(fake, c.body.prompt_id);
        assert.ok(ed.status.messages[0][1].timestamp <= ec.status.messages[0][1].timestamp);
        assert.deepEqual(
          fake.prompts.map((p) => p.status),
          ['success', 'success', 'success', 'success'],
        );
      } finally {
        await ws.close();
      }
    }));

  test('targeted interrupt: a pending id does nothing; the running id ends it with execution_interrupted; the next runs', () =>
    withComfy({ stepMs: 20, steps: 20 }, async (fake) => {
      const ws = await openComfyWs(fake, 'intr');
      try {
        const a = await submitPrompt(fake, defaultWorkflow('long a'), { client_id: 'intr' });
        const b = await submitPrompt(fake, defaultWorkflow('long b'), { client_id: 'intr' });
        await ws.next((m) => m.type === 'progress' && m.data.prompt_id === a.body.prompt_id);
        const miss = await postJson(fake, '/interrupt', { prompt_id: b.body.prompt_id });
        assert.equal(miss.status, 200);
        assert.equal(await miss.text(), '');
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(fake.interrupts(), 0);
        assert.equal((await queue(fake)).queue_running[0][1], a.body.prompt_id, 'A still runs');
        await postJson(fake, '/interrupt', { prompt_id: a.body.prompt_id });
        const intr = await ws.next((m) => m.type === 'execution_interrupted');
        assert.equal(intr.data.prompt_id, a.body.prompt_id);
        assert.equal(intr.data.node_id, '3');
        assert.equal(intr.data.node_type, 'KSampler');
        assert.ok(Array.isArray(intr.data.executed) && typeof intr.data.timestamp === 'number');
        const ea = await historyEntry(fake, a.body.prompt_id);
        assert.equal(ea.status.status_str, 'error');
        assert.equal(ea.status.completed, false);
        assert.equal(ea.status.messages.at(-1)[0], 'execution_interrupted');
        assert.deepEqual(ea.outputs, {});
        // B is not touched by A's interrupt; a global interrupt (no body) stops it.
        await ws.next((m) => m.type === 'progress' && m.data.prompt_id === b.body.prompt_id);
        await fetch(`${fake.url}/interrupt`, { method: 'POST' });
        const eb = await historyEntry(fake, b.body.prompt_id);
        assert.equal(eb.status.messages.at(-1)[0], 'execution_interrupted');
        assert.equal(fake.interrupts(), 2);
        assert.deepEqual(
          fake.prompts.map((p) => p.status),
          ['interrupted', 'interrupted'],
        );
        // ends like any prompt
        await ws.next((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === b.body.prompt_id);
      } finally {
        await ws.close();
      }
    }));

  test('POST /queue delete and clear remove pending prompts', () =>
    withComfy({ stuck: true }, async (fake) => {
      const a = await submitPrompt(fake, defaultWorkflow('a'));
      const b = await submitPrompt(fake, defaultWorkflow('b'));
      const c = await submitPrompt(fake, defaultWorkflow('c'));
      const del = await postJson(fake, '/queue', { delete: [b.body.prompt_id, 'no-such-id'] });
      assert.equal(del.status, 200);
      assert.deepEqual(
        (await queue(fake)).queue_pending.map((i: any) => i[1]),
        [a.body.prompt_id, c.body.prompt_id],
      );
      await postJson(fake, '/queue', { clear: true });
      assert.deepEqual(await queue(fake), { queue_running: [], queue_pending: [] });
      assert.deepEqual(
        fake.prompts.map((p) => p.status),
        ['deleted', 'deleted', 'deleted'],
      );
    }));

  test('a LoadImage of a file never uploaded: 400 custom_validation_failed (real), or execution_error with missingUpload: execution', () =>
    withComfy({}, async (fake) => {
      const r = await submitPrompt(fake, loadImageWorkflow('never-uploaded.png'));
      assert.equal(r.status, 400);
      assert.equal(r.body.node_errors['1'].errors[0].type, 'custom_validation_failed');
      assert.equal(r.body.node_errors['1'].errors[0].details, 'image - Invalid image file: never-uploaded.png');

      fake.setKnobs({ missingUpload: 'execution' });
      const ws = await openComfyWs(fake, 'up');
      try {
        const run = await submitPrompt(fake, loadImageWorkflow('never-uploaded.png'), { client_id: 'up' });
        assert.equal(run.status, 200);
        const err = await ws.next((m) => m.type === 'execution_error');
        assert.equal(err.data.prompt_id, run.body.prompt_id);
        assert.equal(err.data.node_id, '1');
        assert.equal(err.data.node_type, 'LoadImage');
        assert.equal(err.data.exception_type, 'FileNotFoundError');
        assert.match(err.data.exception_message, /never-uploaded\.png/);
        assert.deepEqual(err.data.current_inputs, { image: ['never-uploaded.png'] });
        const e = await historyEntry(fake, run.body.prompt_id);
        assert.equal(e.status.status_str, 'error');
        assert.equal(e.status.messages.at(-1)[0], 'execution_error');
        await ws.next((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === run.body.prompt_id);
      } finally {
        await ws.close();
      }
    }));

  test('failNode: that node fails with execution_error, the nodes before it are in `executed`', () =>
    withComfy({ stepMs: 1 }, async (fake) => {
      const warm = await submitPrompt(fake, defaultWorkflow('fail'));
      assert.equal((await historyEntry(fake, warm.body.prompt_id)).status.status_str, 'success');
      fake.setKnobs({ failNode: '8' }); // fails even though the same graph is now cached
      const r = await submitPrompt(fake, defaultWorkflow('fail'), { client_id: 'nobody-listening' });
      const e = await historyEntry(fake, r.body.prompt_id);
      const [type, data] = e.status.messages.at(-1);
      assert.equal(type, 'execution_error');
      assert.equal(data.node_id, '8');
      assert.equal(data.node_type, 'VAEDecode');
      assert.deepEqual([...data.executed].sort(), ['3', '4', '5', '6', '7']);
      assert.equal(data.exception_type, 'RuntimeError');
      assert.ok(Array.isArray(data.traceback));
      assert.deepEqual(e.outputs, {});
      fake.setKnobs({ failNode: undefined });
      const ok = await submitPrompt(fake, defaultWorkflow('fail'));
      assert.equal((await historyEntry(fake, ok.body.prompt_id)).status.status_str, 'success');
    }));

  test('stuck: prompts are accepted and stay pending with nothing running; un-sticking runs them', () =>
    withComfy({ stuck: true }, async (fake) => {
      const ws = await openComfyWs(fake, 'stuck');
      try {
        const a = await submitPrompt(fake, defaultWorkflow('stuck'), { client_id: 'stuck' });
        assert.equal(a.status, 200);
        await new Promise((r) => setTimeout(r, 100));
        const q = await queue(fake);
        assert.deepEqual(q.queue_running, []);
        assert.deepEqual(
          q.queue_pending.map((i: any) => i[1]),
          [a.body.prompt_id],
        );
        assert.deepEqual(await (await fetch(`${fake.url}/prompt`)).json(), { exec_info: { queue_remaining: 1 } });
        assert.ok(!ws.messages.some((m) => m.type === 'execution_start'));
        assert.ok(
          ws.messages.some((m) => m.type === 'status' && m.data.status.exec_info.queue_remaining === 1),
          'the queue status went out',
        );
        fake.setKnobs({ stuck: false });
        assert.equal((await historyEntry(fake, a.body.prompt_id)).status.status_str, 'success');
      } finally {
        await ws.close();
      }
    }));

  test('restart (refused): sockets dropped, ECONNREFUSED while down, back empty', () =>
    withComfy({ stepMs: 20, steps: 50 }, async (fake) => {
      const ws = await openComfyWs(fake, 'rs');
      const a = await submitPrompt(fake, defaultWorkflow('running'), { client_id: 'rs' });
      const b = await submitPrompt(fake, defaultWorkflow('pending'), { client_id: 'rs' });
      const done = await submitPrompt(fake, {
        '9': { class_type: 'SaveImage', inputs: { images: ['8', 0] } },
        '8': defaultWorkflow()['8'],
      });
      assert.equal(done.status, 400); // (just to have a request in between)
      await ws.next((m) => m.type === 'progress' && m.data.prompt_id === a.body.prompt_id);
      const restarted = fake.restart({ downMs: 150, mode: 'refused' });
      await waitFor(() => ws.closed, 'the websocket is dropped');
      await new Promise((r) => setTimeout(r, 30));
      await assert.rejects(fetch(`${fake.url}/queue`), (e: any) => e?.cause?.code === 'ECONNREFUSED');
      await restarted;
      assert.deepEqual(await queue(fake), { queue_running: [], queue_pending: [] });
      assert.deepEqual(await (await fetch(`${fake.url}/history`)).json(), {});
      assert.deepEqual(
        fake.prompts.map((p) => p.status),
        ['dropped', 'dropped'],
      );
      assert.equal(fake.prompts.find((p) => p.id === b.body.prompt_id)!.status, 'dropped');
      assert.deepEqual(fake.wsClients(), []);
      const again = await openComfyWs(fake, 'rs');
      const st = await again.next((m) => m.type === 'status');
      assert.equal(st.data.status.exec_info.queue_remaining, 0);
      fake.setKnobs({ steps: 2, stepMs: 1 });
      const c = await submitPrompt(fake, defaultWorkflow('after restart'), { client_id: 'rs' });
      assert.equal((await historyEntry(fake, c.body.prompt_id)).status.status_str, 'success');
      await again.close();
    }));

  test('restart (503) and the restarting knob: 503 on HTTP and /ws while down', () =>
    withComfy({}, async (fake) => {
      const ws = await openComfyWs(fake, 'k');
      fake.setKnobs({ restarting: true });
      await waitFor(() => ws.closed, 'the websocket is dropped');
      const r = await fetch(`${fake.url}/system_stats`);
      assert.equal(r.status, 503);
      await assert.rejects(openComfyWs(fake, 'k2'), /503/);
      fake.setKnobs({ restarting: false });
      assert.equal((await fetch(`${fake.url}/system_stats`)).status, 200);
      const p = fake.restart({ downMs: 80, mode: '503' });
      await new Promise((res) => setTimeout(res, 20));
      assert.equal((await fetch(`${fake.url}/queue`)).status, 503);
      await p;
      assert.equal((await fetch(`${fake.url}/queue`)).status, 200);
    }));

  test('a client reconnecting mid-run gets `executing` with the current node', () =>
    withComfy({ stepMs: 20, steps: 50 }, async (fake) => {
      const first = await openComfyWs(fake, 'again');
      const r = await submitPrompt(fake, defaultWorkflow('reconnect'), { client_id: 'again' });
      await first.next((m) => m.type === 'progress');
      await first.close();
      const second = await openComfyWs(fake, 'again');
      try {
        const exec = await second.next((m) => m.type === 'executing');
        assert.deepEqual(exec.data, { node: '3' });
        await second.next(
          (m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === r.body.prompt_id,
        );
      } finally {
        await second.close();
      }
    }));

  test('refuse resets connections; latencyMs delays answers; requests are recorded', () =>
    withComfy({}, async (fake) => {
      fake.setKnobs({ refuse: true });
      await assert.rejects(fetch(`${fake.url}/system_stats`));
      fake.setKnobs({ refuse: false, latencyMs: 120 });
      const t0 = Date.now();
      assert.equal((await fetch(`${fake.url}/system_stats`)).status, 200);
      assert.ok(Date.now() - t0 >= 100);
      fake.setKnobs({ latencyMs: 0 });
      await submitPrompt(fake, defaultWorkflow(), { client_id: 'rec' });
      const rec = fake.requests.find((q) => q.method === 'POST' && q.path === '/prompt')!;
      assert.equal((rec.body as any).client_id, 'rec');
      assert.equal(rec.headers['content-type'], 'application/json');
    }));
});
