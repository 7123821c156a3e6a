/**
 * What the scheduler learnt of each backend, on the console (issue 19): the list's "Learnt"
 * cell (decode, prefill, mean seconds a call, swap) kept live by the event stream, and the edit
 * page's per-model card, over sockets with a fake llama-swap box that takes a known time to load
 * a model. The row model on its own: figures as shown, most-called models first.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';
import { rowLearnt, seconds, tokPerS } from '../src/ui/backends-model.ts';
import type { BackendSlotsSnapshot } from '../src/scheduler/index.ts';

const MASTER = 'ui-learnt-master-key-0123456789';

describe('learnt figures as the console shows them', () => {
  test('rates and seconds are rounded to what a reader needs', () => {
    assert.deepEqual([tokPerS(1234.5), tokPerS(42.26), tokPerS(3)], ['1235 tok/s', '42.3 tok/s', '3.0 tok/s']);
    const shown = [seconds(12.4), seconds(2.44), seconds(0.354), seconds(0.004)];
    assert.deepEqual(shown, ['12 s', '2.4 s', '0.35 s', '< 0.01 s']);
  });

  test("a row: the backend's figures with the mean swap, then its models, most calls first", () => {
    const slots: BackendSlotsSnapshot = {
      name: 'b',
      inflight: 0,
      cap: 1,
      paid: false,
      available: true,
      kind: 'llm',
      service: { decodeRate: 40, prefillRate: 900, serviceSeconds: 2.5, samples: 5 },
      serviceByModel: {
        rare: { decodeRate: 20, serviceSeconds: 4, samples: 1 },
        often: { decodeRate: 45, prefillRate: 900, serviceSeconds: 2, samples: 4 },
      },
      swapSeconds: { rare: 8, often: 4 },
    };
    assert.deepEqual(rowLearnt(slots), {
      decode: '40.0 tok/s',
      prefill: '900 tok/s',
      service: '2.5 s',
      swap: '6.0 s',
      calls: 5,
      more: 0,
      models: [
        { id: 'often', decode: '45.0 tok/s', prefill: '900 tok/s', service: '2.0 s', swap: '4.0 s', calls: 4 },
        { id: 'rare', decode: '20.0 tok/s', service: '4.0 s', swap: '8.0 s', calls: 1 },
      ],
    });
    assert.equal(rowLearnt({ ...slots, service: undefined }), undefined, 'never measured');
    assert.equal(rowLearnt({ ...slots, kind: 'media' }), undefined, 'media boxes are timed per job');
  });
});

test('the list and the edit page show what calls taught, a load as swap', async (t) => {
  const ls = await startFake('llamaswap', { models: ['small', 'big'], knobs: { loadingMs: 300, chunkCount: 8 } });
  const gw = await startGateway([{ name: 'ls', url: ls.url }], { api_key: MASTER, health_check_interval: 3600 });
  t.after(async () => {
    await gw.close();
    await ls.close();
  });
  const ui = await UiClient.login(gw, MASTER);

  let html = await ui.html('/ui/backends');
  assert.match(html, /data-part="learnt:ls"><span class="muted">not measured yet<\/span>/);
  for (const model of ['small', 'big']) {
    // small is loaded (GET /running); big has to load
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    await res.text();
  }
  await waitForCalls(gw.gateway.scheduler, 2);

  html = await ui.html('/ui/backends');
  const cell = html.match(/data-part="learnt:ls">([\s\S]*?)<\/td>/)?.[1] ?? '';
  assert.match(cell, /<strong>1000 tok\/s<\/strong>/, "decode, from the box's llama.cpp timings");
  assert.match(cell, /prefill 4000 tok\/s/);
  assert.match(cell, /· 2 calls/);
  assert.match(cell, /s a call/);
  assert.match(cell, /swap ≈ 0\.[2-4]\d s/, `one load of 0.3 s: ${cell}`);

  const edit = await ui.html('/ui/backends/ls/edit');
  const card = edit.match(/<h2 id="h-learnt">Learnt speed<\/h2>([\s\S]*?)<\/section>/)?.[1] ?? '';
  const items = [...card.matchAll(/<span class="bk-learnt-id[^"]*">([^<]+)<\/span>/g)].map((m) => m[1]);
  assert.deepEqual(items, ['all models', 'big', 'small']);
  assert.match(card, /swap <strong>0\.[2-4]\d s<\/strong>/, "big's own swap");

  const res = await ui.get('/ui/backends/events');
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes('"name":"learnt:ls"')) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  assert.match(text, /"name":"learnt:ls","html":".*1000 tok\/s.*swap/, 'the cell is a live part');
});

/** Until `n` calls are learnt on the one backend (an attempt settles just after its body ends). */
async function waitForCalls(scheduler: { snapshot(): { backends: BackendSlotsSnapshot[] } }, n: number) {
  for (let i = 0; i < 200 && (scheduler.snapshot().backends[0]?.service?.samples ?? 0) < n; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
