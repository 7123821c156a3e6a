/**
 * The Statistics tab over real sockets: a gateway on fake boxes with seeded history and real
 * calls, logged in through the form; totals and tables that agree with the call log, presets
 * and a custom range (per hour for 24 h), the prompt-cache split with "no cache reporting",
 * the chart data as escaped JSON, refused ranges with inline errors, XSS-shaped names as text.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ChartData } from '../src/ui/stats-model.ts';
import { startCallsRig, MASTER_KEY, type CallsRig } from './helpers/calls-rig.ts';
import { XSS } from './helpers/calls-seed.ts';
import { UiClient } from './helpers/ui.ts';

const DAY = 86_400_000;
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const unescape = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const chartData = (html: string): ChartData =>
  JSON.parse(unescape(/id="stats-data" hidden data-json="([^"]*)"/.exec(html)![1]));
/** The value of a stat card by its label. */
const card = (html: string, label: string) =>
  new RegExp(`<span class="label">${label}</span>\\s*<span class="value">([^<]+)<`).exec(html)?.[1];
/** One group table (Per backend / model / source / day) of the page. */
const section = (html: string, id: string) => html.split(`id="h-${id}"`)[1].split('</section>')[0];

describe('Statistics tab', () => {
  let rig: CallsRig;
  let ui: UiClient;
  before(async () => {
    rig = await startCallsRig({ seed: { count: 2_000, days: 20, xss: true } });
    ui = await UiClient.login(rig.gw, MASTER_KEY);
  });
  after(() => rig.close());

  test('asks for a login first', async () => {
    assert.equal((await fetch(`${rig.url}/ui/stats`, { redirect: 'manual' })).status, 303);
  });

  test('7 days by default: totals as the call log has them, per day, with charts data', async () => {
    const html = await ui.html('/ui/stats');
    const today = Math.floor(Date.now() / DAY) * DAY;
    const since = today - 6 * DAY;
    const exact = rig.gw.gateway.callLog.aggregate('backend', { since, until: today + DAY });
    const calls = exact.reduce((n, r) => n + r.calls, 0);
    assert.equal(card(html, 'Calls'), calls.toLocaleString('en-US'));
    assert.match(html, /aria-current="true">7 d</);
    assert.match(html, new RegExp(`${utcDay(since)} – ${utcDay(today)} UTC \\(7 days\\), per day`));
    const chart = chartData(html);
    assert.equal(chart.step, 'day');
    assert.equal(chart.t.length, 7);
    assert.equal(
      chart.calls.reduce((a, b) => a + b, 0),
      calls,
    );
    for (const key of ['errors', 'prompt', 'completion', 'cost', 'p50', 'p95', 'ttft50', 'ttft95', 'hit'] as const)
      assert.equal(chart[key].length, 7, key);
    for (const name of ['calls', 'tokens', 'cost', 'duration', 'ttft', 'hit'])
      assert.match(html, new RegExp(`data-chart="${name}"`));
    assert.match(html, /src="\/ui\/vendor\/uplot\/uPlot\.iife\.min\.js"/);
    // per backend: the numbers of aggregate(), with a bar each
    const backends = section(html, 'g-backend');
    for (const r of exact.slice(0, 5)) {
      assert.match(
        backends,
        new RegExp(
          `<th scope="row" class="mono key">${r.key.replace(/[()]/g, '\\$&')}</th>\\s*<td data-label="Calls" class="bar-col"><span class="bar-num">${r.calls.toLocaleString('en-US')} `,
        ),
      );
    }
    assert.match(
      backends,
      /<svg class="bar"[^>]*><rect x="0" y="0" width="100" height="6">/,
      'the busiest backend has the full bar',
    );
    const days = section(html, 'periods');
    assert.equal(days.split('<tr>').length - 2, chart.calls.filter((n) => n > 0).length, 'a row per day with calls');
    assert.ok(!html.includes(MASTER_KEY));
  });

  test('the last 24 hours per hour; 30 days; a custom range of UTC days', async () => {
    const hours = chartData(await ui.html('/ui/stats?range=24h'));
    assert.equal(hours.step, 'hour');
    assert.equal(hours.t.length, 24);
    assert.equal(hours.t[1] - hours.t[0], 3600);
    const month = await ui.html('/ui/stats?range=30d');
    assert.equal(chartData(month).t.length, 30);
    assert.equal(
      card(month, 'Calls'),
      (2_000 + 2 + 3).toLocaleString('en-US'),
      'everything: seeded, XSS-shaped, the rig calls',
    );
    const since = utcDay(Date.now() - 10 * DAY);
    const until = utcDay(Date.now() - 3 * DAY);
    const custom = await ui.html(`/ui/stats?range=custom&since=${since}&until=${until}`);
    assert.equal(chartData(custom).t.length, 8, 'both days included');
    assert.match(custom, new RegExp(`${since} – ${until} UTC \\(8 days\\)`));
    assert.match(custom, new RegExp(`id="s-since" name="since" type="date" value="${since}"`));
    const exact = rig.gw.gateway.callLog.aggregate('day', { since: Date.parse(since), until: Date.parse(until) + DAY });
    assert.equal(card(custom, 'Calls'), exact.reduce((n, r) => n + r.calls, 0).toLocaleString('en-US'));
    const empty = await ui.html('/ui/stats?range=custom&since=2020-01-01&until=2020-01-31');
    assert.match(empty, /No calls in this range/);
    assert.ok(!empty.includes('id="stats-data"'));
  });

  test('prompt cache: cached / written / fresh, and "no cache reporting" for the backends that never report', async () => {
    const html = await ui.html('/ui/stats?range=30d');
    const cache = section(html, 'cache');
    for (const label of ['cached', 'written', 'fresh', 'no cache reporting'])
      assert.match(cache, new RegExp(`<span class="name">${label}</span>`));
    assert.match(
      cache,
      /backends that never reported a cache read or write\s*\(<span class="mono">[^<]*gpu-3090[^<]*mac-studio/,
    );
    const backends = section(html, 'g-backend');
    const row = (name: string) => backends.split(`>${name}</th>`)[1].split('</tr>')[0];
    assert.match(row('gpu-3090'), /no cache reporting/, 'no hits reported is not a 0 % hit rate');
    assert.match(row('anthropic'), /\d+ \/ \d+ \/ \d+ %/, 'cached / written / fresh');
    assert.match(row('anthropic'), /class="seg-written"/);
    const hit = chartData(html).hit;
    assert.ok(hit.some((v) => v !== null && v > 0));
    assert.match(card(html, 'Prompt-cache hit rate') ?? '', /^\d+\.\d %$/);
  });

  test('a refused range: 400, the message next to its field, the last 7 days shown', async () => {
    const today = utcDay(Date.now());
    const cases: [string, RegExp, string][] = [
      [`since=${today}&until=2020-01-01`, /id="s-until-error">Must not be before/, 's-until'],
      ['since=2026-02-30', /id="s-since-error">A date like/, 's-since'],
      ['since=', /id="s-since-error">Enter the first day/, 's-since'],
      ['since=2020-01-01', /id="s-until-error">At most 400 days/, 's-until'],
    ];
    for (const [q, message, field] of cases) {
      const res = await ui.get(`/ui/stats?range=custom&${q}`);
      assert.equal(res.status, 400, q);
      const html = await res.text();
      assert.match(html, message, q);
      assert.match(
        html,
        new RegExp(`id="${field}"[^>]*aria-describedby="${field}-error s-range-hint" aria-invalid="true"`),
        q,
      );
      assert.match(html, /showing the last 7 days/);
      assert.equal(chartData(html).t.length, 7);
    }
    assert.equal((await ui.get('/ui/stats?range=1y')).status, 400);
  });

  test('XSS-shaped backend, model and source names render as text', async () => {
    const html = await ui.html('/ui/stats?range=24h');
    assert.ok(!html.includes(XSS));
    for (const id of ['g-backend', 'g-model', 'g-source'])
      assert.ok(section(html, id).includes('&lt;script&gt;alert(1)&lt;/script&gt;'), id);
    assert.ok(!/data-json="[^"]*</.test(html), 'the chart data has no raw <');
  });
});
