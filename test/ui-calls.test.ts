/**
 * The LLM calls tab over real sockets: a gateway on fake llama.cpp and OpenRouter boxes,
 * logged in through the form; the list with tokens, cache split, cost and refusals, every
 * filter and its inline errors, paging, a call's detail with its bodies (JSON, SSE events),
 * "no bodies captured", XSS-shaped names as text, no key in any page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startCallsRig, MASTER_KEY, type CallsRig } from './helpers/calls-rig.ts';
import { XSS } from './helpers/calls-seed.ts';
import { callRecord } from './helpers/call-record.ts';
import { UiClient } from './helpers/ui.ts';

const ESCAPED = '&lt;script&gt;alert(1)&lt;/script&gt;';
/** The rows of the calls table (one `<tr>` each, header aside). */
const rows = (html: string) => (html.split('<tbody>')[1] ?? '').split('</tbody>')[0].split('<tr').slice(1);

describe('LLM calls tab', () => {
  let rig: CallsRig;
  let ui: UiClient;
  before(async () => {
    rig = await startCallsRig({ seed: { count: 130, days: 2, xss: true } });
    rig.gw.gateway.callLog.record(
      callRecord({ ts: Date.now() - 3_600_000, backend: 'gpu', status: 502, reason: 'upstream_error', user_id: null }),
    );
    await rig.gw.gateway.callLog.flush();
    ui = await UiClient.login(rig.gw, MASTER_KEY);
  });
  after(() => rig.close());

  test('asks for a login first', async () => {
    const res = await fetch(`${rig.url}/ui/calls?status=5xx`, { redirect: 'manual' });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `/ui/login?next=${encodeURIComponent('/ui/calls?status=5xx')}`);
    assert.equal((await fetch(`${rig.url}/ui/calls/${rig.ids.json}`, { redirect: 'manual' })).status, 303);
  });

  test('lists the newest 50 with tokens, cache split, cost, ttft and refusals with their reason', async () => {
    const html = await ui.html('/ui/calls');
    const list = rows(html);
    assert.equal(list.length, 50);
    assert.match(list[0], /no-such-model/, 'newest first: the refused call');
    assert.match(list[0], /refused/);
    assert.match(list[0], /unknown_model/);
    const paid = list.find((r) => r.includes('or/acme/chat-large'))!;
    assert.match(paid, /<span class="c-cached">40<\/span> \/ <span>0<\/span> \/ \d+/, 'cached / written / fresh');
    assert.match(paid, /\$0\.\d+/, 'what it spent');
    assert.match(paid, />n8n</, 'the source');
    const streamed = list.find((r) => r.includes('gpu/qwen3-8b'))!;
    assert.match(streamed, /data-label="TTFT" class="num">\d+ ms</);
    assert.match(streamed, /free/);
    assert.match(html, /rel="next"/, 'an older page');
    assert.ok(!html.includes(MASTER_KEY), 'no key in the page');
  });

  test('filters: status class or code, backend, model, source, time', async () => {
    const statuses = async (q: string) =>
      rows(await ui.html(`/ui/calls?${q}`)).map((r) => Number(/class="code s\d">(\d+)</.exec(r)?.[1]));
    const fives = await statuses('status=5xx');
    assert.ok(fives.length > 0 && fives.every((s) => s >= 500 && s < 600), String(fives));
    const fours = await statuses('status=4xx');
    assert.ok(fours.length > 0 && fours.every((s) => s >= 400 && s < 500));
    assert.ok((await statuses('status=404')).every((s) => s === 404));
    const or = rows(await ui.html('/ui/calls?backend=or'));
    assert.equal(or.length, 1);
    assert.equal(rows(await ui.html('/ui/calls?model=acme%2Fchat-large')).length, 1, 'the served model');
    assert.equal(
      rows(await ui.html('/ui/calls?model=or%2Facme%2Fchat-large&source=n8n')).length,
      1,
      'the model asked for',
    );
    assert.equal(rows(await ui.html('/ui/calls?source=n8n&backend=gpu')).length, 0);
    const refused = rows(await ui.html('/ui/calls?backend=(refused)'));
    assert.ok(refused.length > 1 && refused.every((r) => r.includes('refused-tag')));
    const future = await ui.html(`/ui/calls?since=${new Date(Date.now() + 3_600_000).toISOString().slice(0, 16)}`);
    assert.match(future, /No call matches this filter/);
    const until = new Date(Date.now() - 86_400_000).toISOString().slice(0, 16);
    const older = rows(await ui.html(`/ui/calls?until=${until}`));
    assert.ok(
      older.length > 0 && older.every((r) => Date.parse(/datetime="([^"]+)"/.exec(r)![1]) < Date.parse(`${until}Z`)),
    );
    const form = await ui.html('/ui/calls?status=5xx&backend=gpu');
    assert.match(form, /id="f-status" name="status"[^>]*value="5xx"/, 'the form keeps the filter');
  });

  test('a refused filter: 400, each message next to its field, nothing listed', async () => {
    const res = await ui.get('/ui/calls?status=20x&since=2026-02-30&until=soon&source=ok');
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /id="f-status"[^>]*aria-invalid="true"/);
    assert.match(html, /id="f-status-error">A status code/);
    assert.match(html, /id="f-since-error">&quot;2026-02-30&quot; is not a date/);
    assert.match(html, /id="f-until-error">/);
    assert.match(html, /value="ok"/, 'the valid fields as typed');
    assert.equal(rows(html).length, 0);
    assert.match(html, /Fix the filter above/);
  });

  test('pages by beforeId: newest first, no call twice, none left out', async () => {
    const seen = new Set<string>();
    let path = '/ui/calls';
    let pages = 0;
    for (; pages < 10; pages++) {
      const html = await ui.html(path);
      for (const r of rows(html)) {
        const id = /href="\/ui\/calls\/(\d+)/.exec(r)![1];
        assert.ok(!seen.has(id), `call ${id} twice`);
        seen.add(id);
      }
      const next = /href="([^"]+)" rel="next"/.exec(html)?.[1];
      if (!next) break;
      path = next.replace(/&amp;/g, '&');
      assert.match(path, /beforeId=\d+/);
    }
    assert.equal(seen.size, 130 + 2 + 3 + 1, 'seeded, XSS-shaped, the rig calls and a 502');
    assert.equal(pages, 2, 'three pages of 50');
    assert.equal((await ui.get('/ui/calls?beforeId=abc')).status, 400);
  });

  test('a streamed call: request pretty, response as its events and the text it streamed', async () => {
    const html = await ui.html(`/ui/calls/${rig.ids.streamed}?back=status%3D2xx%26nope%3D1`);
    assert.match(html, /<h1>Call \d+<\/h1>/);
    assert.match(html, /event stream/);
    assert.match(html, /Streamed text<\/h4>\s*<pre class="code-block streamed">[^<]*tok0/);
    assert.match(html, /\d+ events<\/summary>/);
    assert.match(html, /\[DONE\]/);
    assert.match(
      html,
      /&quot;content&quot;: &quot;Say hi &lt;b&gt;bold&lt;\/b&gt;&quot;/,
      'the prompt pretty and escaped',
    );
    assert.match(html, /href="\/ui\/calls\?status=2xx"/, 'back to the list as filtered, unknown fields dropped');
    assert.match(html, /Time to first token<\/dt><dd>\d+ ms/);
  });

  test('a paid call: JSON bodies, cache split, computed and upstream cost', async () => {
    const html = await ui.html(`/ui/calls/${rig.ids.json}`);
    assert.match(html, /<span class="tag">JSON<\/span>/);
    assert.match(html, /&quot;prompt_tokens&quot;: \d+/);
    assert.match(html, /Read from cache<\/dt><dd class="c-cached">40</);
    assert.match(html, /Upstream-reported cost<\/dt><dd>\$0\.\d+/);
    assert.match(html, /Source<\/dt><dd>n8n/);
  });

  test('a refused call with its reason; an unknown call is a 404 page', async () => {
    const html = await ui.html(`/ui/calls/${rig.ids.refused}`);
    assert.match(html, /refused-tag">refused/);
    assert.match(html, /class="reason">unknown_model/);
    for (const bad of ['999999', 'abc', '0', '-1']) {
      const res = await ui.get(`/ui/calls/${bad}`);
      assert.equal(res.status, 404, bad);
      assert.match(await res.text(), /no call with this number/);
    }
  });

  test('XSS-shaped backend, model, source, reason and reasoning render as text', async () => {
    for (const path of ['/ui/calls', `/ui/calls?source=${encodeURIComponent(XSS)}`]) {
      const html = await ui.html(path);
      assert.ok(!html.includes(XSS), `${path}: raw markup`);
      assert.ok(html.includes(ESCAPED), `${path}: escaped text`);
    }
    const id = /href="\/ui\/calls\/(\d+)/.exec(
      rows(await ui.html(`/ui/calls?backend=${encodeURIComponent(XSS)}`))[0],
    )![1];
    const detail = await ui.html(`/ui/calls/${id}?back=source%3D${encodeURIComponent(encodeURIComponent(XSS))}`);
    assert.ok(!detail.includes(XSS));
    assert.ok(detail.includes(ESCAPED));
  });
});

describe('LLM calls tab without body capture', () => {
  test('a call says no bodies were captured, and why', async (t) => {
    const rig = await startCallsRig({ captureBodies: false });
    t.after(() => rig.close());
    const ui = await UiClient.login(rig.gw, MASTER_KEY);
    const html = await ui.html(`/ui/calls/${rig.ids.streamed}`);
    assert.match(html, /No bodies captured for this call/);
    assert.match(html, /<code>capture_bodies<\/code> is off/);
    // a row still queued (not on disk yet) is found too
    rig.gw.gateway.callLog.record(callRecord({ ts: Date.now(), backend: 'queued-one', user_id: null }));
    const queued = rig.gw.gateway.callLog.recent({ backend: 'queued-one' })[0];
    assert.match(await ui.html(`/ui/calls/${queued.id}`), /queued-one/);
  });
});
