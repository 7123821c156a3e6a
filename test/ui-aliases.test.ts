/**
 * The console's aliases tab over real HTTP, on a real gateway in front of two fake backends:
 * create an alias (listed by /v1/models, a chat through it reaches the mapped backend with its
 * sampling defaults), decimal commas stored as numbers, the JSON box refusing keys that have
 * their own input, config validation (an unknown backend) shown next to the field with nothing
 * of the three settings saved, rename / remove, glob aliases, the live map with collisions
 * (covered vs shadowed), the ?q= filter, the config.yaml / store source with reset, CSRF on
 * every form, and names shaped like a script tag rendered as text. A browser test (skipped
 * without chromium) adds a backend row and filters as you type.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { launchChromium, logIn, skipWithoutChromium } from './helpers/browser.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'ui-aliases-master-key-0123456789';
const XSS = '<script>alert(1)</script>';

const blank = {
  original: '',
  mode: 'map',
  single: '',
  park_s: '',
  reasoning: '',
  sampling_json: '',
  voice: '',
  s_temperature: '',
  s_top_p: '',
  s_top_k: '',
  s_min_p: '',
  s_repetition_penalty: '',
  s_presence_penalty: '',
  s_frequency_penalty: '',
};

async function modelIds(gw: TestGateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${MASTER}` } });
  return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
}

async function chat(gw: TestGateway, model: string): Promise<{ status: number; backend: string | null }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.text();
  return { status: res.status, backend: res.headers.get('x-gateway-backend') };
}

const lastChat = (f: FakeBackend) =>
  f.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions')).at(-1)?.body;

/** The three settings an alias spans, as stored and as in force. */
function snapshot(gw: TestGateway): string {
  const cfg = gw.gateway.config();
  const store = ['virtual_models', 'alias_park', 'alias_defaults'].map((k) => gw.gateway.settings.get(k));
  return JSON.stringify([cfg.virtual_models, cfg.alias_park, cfg.alias_defaults, store]);
}

describe('console aliases tab', () => {
  let gw: TestGateway;
  let a: FakeBackend;
  let b: FakeBackend;
  let ui: UiClient;
  before(async () => {
    a = await startFake('llamacpp', { models: ['qwen3-8b', XSS] });
    b = await startFake('vllm', { models: ['Qwen/Qwen3-8B', 'coder-model'] });
    gw = await startGateway(
      [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url },
      ],
      {
        api_key: MASTER,
        virtual_models: { existing: { a: 'qwen3-8b' } },
        alias_park: { existing: 30 },
      },
    );
    ui = await UiClient.login(gw, MASTER);
  });
  after(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
  });

  test('the list shows an alias from config.yaml, where it resolves now, and the source', async () => {
    const html = await ui.html('/ui/aliases');
    assert.match(html, /<th scope="row" class="al-name">[\s\S]*?existing<\/a>/);
    assert.match(html, /30 s/);
    assert.match(html, /<span class="tag">config.yaml<\/span>/);
    assert.doesNotMatch(html, /Reset to/, 'nothing stored yet');
    assert.doesNotMatch(html, /\sstyle="/, 'no inline style');
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  });

  test('create an alias: /v1/models lists it, a chat reaches the mapped backend with the defaults', async () => {
    await ui.get('/ui/aliases/new');
    const res = await ui.post('/ui/aliases/save', {
      ...blank,
      name: 'smart',
      map_backend: ['b', ''],
      map_model: ['Qwen/Qwen3-8B', ''],
      park_s: '12,5',
      reasoning: 'off',
      s_temperature: '0,7',
      s_top_k: '20',
      s_repetition_penalty: '1,05',
      sampling_json: '{"seed": 7}',
    });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/ui/aliases?saved=saved&name=smart');
    assert.ok((await modelIds(gw)).includes('smart'));
    const call = await chat(gw, 'smart');
    assert.equal(call.status, 200);
    assert.equal(call.backend, 'b');
    const sent = lastChat(b);
    assert.equal(sent.model, 'Qwen/Qwen3-8B');
    assert.equal(sent.temperature, 0.7);
    assert.equal(sent.seed, 7);
    const stored = gw.gateway.settings.get('alias_defaults') as Record<
      string,
      { sampling_defaults: Record<string, unknown>; reasoning: string }
    >;
    assert.deepEqual(stored.smart, {
      reasoning: 'off',
      sampling_defaults: { temperature: 0.7, top_k: 20, repetition_penalty: 1.05, seed: 7 },
    });
    assert.equal(typeof stored.smart.sampling_defaults.temperature, 'number', 'a decimal comma is stored as a number');
    assert.equal((gw.gateway.settings.get('alias_park') as Record<string, number>).smart, 12.5);
    const page = await ui.html('/ui/aliases?saved=saved&name=smart');
    assert.match(page, /Saved smart/);
    assert.match(page, /<span class="tag al-store">store<\/span> <span class="al-warn-text">overrides config.yaml/);
    const edit = await ui.html('/ui/aliases/edit?name=smart');
    assert.match(edit, /id="s_temperature" name="s_temperature" type="text" inputmode="decimal" value="0.7"/);
    assert.match(edit, /&quot;seed&quot;: 7/);
    assert.doesNotMatch(edit, /&quot;temperature&quot;/, 'a sampler with its own input is not in the JSON box');
  });

  test('the JSON box refuses a key that has its own input: inline error, nothing saved', async () => {
    const before = snapshot(gw);
    const res = await ui.post('/ui/aliases/save', {
      ...blank,
      name: 'json-dup',
      map_backend: 'a',
      map_model: 'qwen3-8b',
      s_top_p: '0,9',
      sampling_json: '{"temperature": 0.5, "seed": 1}',
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(
      html,
      /id="sampling_json"[^>]*aria-describedby="sampling_json-error sampling_json-hint" aria-invalid="true"/,
    );
    assert.match(html, /<p class="error" id="sampling_json-error">&quot;temperature&quot; has its own input above/);
    assert.match(html, /value="0,9"/, 'the values typed come back');
    assert.equal(snapshot(gw), before);
  });

  test('an unknown backend is refused by config validation next to its row; none of the three settings is saved', async () => {
    const before = snapshot(gw);
    const res = await ui.post('/ui/aliases/save', {
      ...blank,
      name: 'ghostly',
      map_backend: ['a', 'ghost'],
      map_model: ['qwen3-8b', 'm'],
      park_s: '5',
      reasoning: 'on',
      s_temperature: '0,3',
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /<p class="error" id="map-1-backend-error">Names no backend in backends\[\] \(known: a, b\)/);
    assert.match(html, /id="map-1-backend"[^>]*aria-invalid="true"/);
    assert.match(html, /<option value="ghost" data-list="dl-models" data-unknown selected>ghost \(not in the fleet\)/);
    assert.match(html, /Nothing was saved: one problem/);
    assert.equal(snapshot(gw), before, 'neither virtual_models nor alias_park nor alias_defaults');
    assert.equal((await chat(gw, 'ghostly')).status, 404);
  });

  test('unreadable numbers, a missing name, a duplicate backend row are the form’s own errors', async () => {
    const before = snapshot(gw);
    const res = await ui.post('/ui/aliases/save', {
      ...blank,
      name: '',
      map_backend: ['a', 'a'],
      map_model: ['qwen3-8b', 'x'],
      s_top_p: 'lots',
      s_top_k: '2,5',
      park_s: 'soon',
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    for (const id of ['name', 's_top_p', 's_top_k', 'park_s', 'map-1-backend'])
      assert.match(html, new RegExp(`id="${id}-error"`), id);
    assert.match(html, /Nothing was saved: 5 problems/);
    assert.equal(snapshot(gw), before);
  });

  test('a name already taken is refused; renaming moves the park timeout and defaults with it', async () => {
    const taken = await ui.post('/ui/aliases/save', {
      ...blank,
      name: 'existing',
      map_backend: 'a',
      map_model: 'qwen3-8b',
    });
    assert.equal(taken.status, 400);
    assert.match(await taken.text(), /An alias named “existing” exists already/);
    const res = await ui.post('/ui/aliases/save', {
      ...blank,
      original: 'smart',
      name: 'clever',
      map_backend: 'b',
      map_model: 'Qwen/Qwen3-8B',
      park_s: '12,5',
      reasoning: 'off',
      s_temperature: '0,7',
    });
    assert.equal(res.status, 303);
    const cfg = gw.gateway.config();
    assert.equal(cfg.virtual_models.smart, undefined);
    assert.deepEqual(cfg.virtual_models.clever, { b: 'Qwen/Qwen3-8B' });
    assert.equal(cfg.alias_park.clever, 12.5);
    assert.equal(cfg.alias_park.smart, undefined);
    assert.deepEqual(cfg.alias_defaults.clever, { reasoning: 'off', sampling_defaults: { temperature: 0.7 } });
    assert.equal(cfg.alias_defaults.smart, undefined);
    const ids = await modelIds(gw);
    assert.ok(ids.includes('clever') && !ids.includes('smart'));
  });

  test('a single model id for any backend serving it; remove takes the alias and its settings away', async () => {
    assert.equal(
      (
        await ui.post('/ui/aliases/save', {
          ...blank,
          name: 'anyone',
          mode: 'single',
          single: 'coder-model',
          park_s: '3',
        })
      ).status,
      303,
    );
    assert.equal((await chat(gw, 'anyone')).backend, 'b');
    const res = await ui.post('/ui/aliases/remove', { name: 'anyone' });
    assert.equal(res.status, 303);
    assert.equal(gw.gateway.config().virtual_models.anyone, undefined);
    assert.equal(gw.gateway.config().alias_park.anyone, undefined);
    assert.ok(!(await modelIds(gw)).includes('anyone'));
    const again = await ui.post('/ui/aliases/remove', { name: 'anyone' });
    assert.equal(again.status, 404);
  });

  test('glob aliases: listed in order, reaching their target, shadowed by exact aliases and served ids', async () => {
    assert.equal(
      (await ui.post('/ui/aliases/save', { ...blank, name: 'claude-*', mode: 'single', single: 'clever' })).status,
      303,
    );
    assert.equal(
      (await ui.post('/ui/aliases/save', { ...blank, name: 'claude-*haiku*', map_backend: 'a', map_model: 'qwen3-8b' }))
        .status,
      303,
    );
    assert.equal(
      (await ui.post('/ui/aliases/save', { ...blank, name: 'coder-*', map_backend: 'a', map_model: 'qwen3-8b' }))
        .status,
      303,
    );
    assert.equal(
      (await ui.post('/ui/aliases/save', { ...blank, name: 'claude-exact', map_backend: 'a', map_model: 'qwen3-8b' }))
        .status,
      303,
    );
    assert.equal((await chat(gw, 'claude-sonnet-4-5')).backend, 'b', 'through claude-* → clever → b');
    assert.equal((await chat(gw, 'claude-3-5-haiku')).backend, 'a', 'the more specific pattern wins');
    const html = await ui.html('/ui/aliases');
    const globs = html.slice(html.indexOf('id="h-patterns"'), html.indexOf('id="h-sources"'));
    assert.ok(globs.indexOf('claude-*haiku*') < globs.indexOf('>claude-*<'), 'most specific first');
    assert.match(globs, /Exact aliases win: <code>claude-exact<\/code>/);
    assert.match(globs, /Served models win: <code>coder-model<\/code>/);
    assert.ok(!(await modelIds(gw)).includes('claude-*'), 'patterns are not listed');
  });

  test('collisions: an alias that is also a real model id, covered or shadowed', async () => {
    // qwen3-8b is served by a; the alias still reaches a under that id: covered
    assert.equal(
      (await ui.post('/ui/aliases/save', { ...blank, name: 'qwen3-8b', map_backend: 'a', map_model: 'qwen3-8b' }))
        .status,
      303,
    );
    // coder-model is served by b; the alias sends it to a instead: b's copy is reachable only as b/coder-model
    assert.equal(
      (await ui.post('/ui/aliases/save', { ...blank, name: 'coder-model', map_backend: 'a', map_model: 'qwen3-8b' }))
        .status,
      303,
    );
    const html = await ui.html('/ui/aliases');
    const row = (name: string) =>
      html.slice(html.indexOf(`>${name}</a>`), html.indexOf('</tr>', html.indexOf(`>${name}</a>`)));
    assert.match(row('qwen3-8b'), /al-flag ok">covered/);
    assert.match(row('coder-model'), /al-flag warn">shadowed[\s\S]*reachable only as <code>b\/coder-model<\/code>/);
    assert.match(html, /<span class="num">2<\/span> collisions/);
  });

  test('the filter: ?q= narrows the rows on the server (script filters the same rows as you type)', async () => {
    const html = await ui.html('/ui/aliases?q=SHADOWED');
    assert.match(html, /Showing \d+ of \d+/);
    assert.match(html, />coder-model<\/a>/);
    assert.doesNotMatch(html, />existing<\/a>/);
    const none = await ui.html('/ui/aliases?q=no-such-thing');
    assert.match(none, /<p class="empty al-none" data-filter-empty>No chat alias matches the filter/);
    assert.match(none, /id="q" name="q" type="search" value="no-such-thing"/);
  });

  test('reset: the stored table goes, config.yaml’s is back in force', async () => {
    const res = await ui.post('/ui/aliases/reset', { key: 'virtual_models' });
    assert.equal(res.status, 303);
    assert.deepEqual(gw.gateway.config().virtual_models, { existing: { a: 'qwen3-8b' } });
    assert.equal((await ui.post('/ui/aliases/reset', { key: 'backends' })).status, 400, 'only this tab’s settings');
  });

  test('CSRF: every form without the token or with a wrong one is refused with 403 and changes nothing', async () => {
    assert.equal(
      (
        await ui.post('/ui/aliases/save', {
          ...blank,
          name: 'to-remove',
          map_backend: 'a',
          map_model: 'qwen3-8b',
          park_s: '4',
        })
      ).status,
      303,
    );
    const forms: [string, Record<string, string | string[]>][] = [
      ['/ui/aliases/save', { ...blank, name: 'forged', map_backend: 'a', map_model: 'qwen3-8b' }],
      [
        '/ui/aliases/save',
        { ...blank, original: 'to-remove', name: 'to-remove', map_backend: 'b', map_model: 'coder-model' },
      ],
      ['/ui/aliases/remove', { name: 'to-remove' }],
      ['/ui/aliases/reset', { key: 'alias_park' }],
    ];
    for (const [path, fields] of forms) {
      for (const csrf of ['', 'forged-token']) {
        const before = snapshot(gw);
        const res = await ui.post(path, fields, { csrf });
        assert.equal(res.status, 403, `${path} with token ${JSON.stringify(csrf)}`);
        assert.match(await res.text(), /CSRF/);
        assert.equal(snapshot(gw), before, `${path}: nothing changed`);
      }
    }
    assert.equal(new UiClient(gw.url).csrf, '');
    const anon = await new UiClient(gw.url).post('/ui/aliases/remove', { name: 'to-remove' });
    assert.ok(anon.status === 403 || anon.status === 401, 'no session, no change');
    assert.ok(gw.gateway.config().virtual_models['to-remove']);
  });

  test('names shaped like a script tag render as text, in the list and the editor', async () => {
    assert.equal(
      (
        await ui.post('/ui/aliases/save', {
          ...blank,
          name: XSS,
          map_backend: 'a',
          map_model: XSS,
          voice: '<img src=x onerror=alert(1)>',
        })
      ).status,
      303,
    );
    assert.equal((await chat(gw, XSS)).backend, 'a');
    for (const path of [
      '/ui/aliases',
      `/ui/aliases/edit?name=${encodeURIComponent(XSS)}`,
      `/ui/aliases?q=${encodeURIComponent('<script>')}`,
    ]) {
      const html = await ui.html(path);
      assert.ok(!html.includes(XSS), `${path}: no raw script tag`);
      assert.ok(!html.includes('<img src=x'), `${path}: no raw img tag`);
      assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), `${path}: shown as text`);
    }
  });
});

describe('aliases tab in a browser', { skip: skipWithoutChromium }, () => {
  let gw: TestGateway;
  let a: FakeBackend;
  let b: FakeBackend;
  before(async () => {
    a = await startFake('llamacpp', { models: ['qwen3-8b'] });
    b = await startFake('vllm', { models: ['Qwen/Qwen3-8B'] });
    gw = await startGateway(
      [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url },
      ],
      { api_key: MASTER, virtual_models: { existing: { a: 'qwen3-8b' }, other: 'qwen3-8b' } },
    );
  });
  after(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
  });

  test('create an alias with two backend rows, then filter the list as you type', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(err.message));
      page.on('console', (m) => {
        if (m.type() === 'error' && !m.location().url.endsWith('/favicon.ico')) problems.push(m.text());
      });
      await logIn(page, gw.url, MASTER);
      await page.goto(`${gw.url}/ui/aliases/new`);
      assert.equal(
        await page.isVisible('#single'),
        false,
        'the single-model panel is hidden while "per backend" is chosen',
      );
      await page.fill('#name', 'both');
      await page.selectOption('#map-0-backend', 'a');
      assert.equal(await page.getAttribute('#map-0-model', 'list'), 'dl-b-0', 'the model picker offers a’s models');
      await page.fill('#map-0-model', 'qwen3-8b');
      await page.click('[data-add-row]');
      assert.equal(page.url(), `${gw.url}/ui/aliases/new`, 'a row was added without a round trip');
      await page.selectOption('#map-1-backend', 'b');
      assert.equal(await page.getAttribute('#map-1-model', 'list'), 'dl-b-1');
      await page.fill('#map-1-model', 'Qwen/Qwen3-8B');
      await page.fill('#s_temperature', '0,6');
      await Promise.all([page.waitForURL(/\/ui\/aliases\?saved=saved/), page.click('button.primary[type="submit"]')]);
      assert.deepEqual(gw.gateway.config().virtual_models.both, { a: 'qwen3-8b', b: 'Qwen/Qwen3-8B' });
      assert.equal(gw.gateway.config().alias_defaults.both.sampling_defaults?.temperature, 0.6);

      await page.fill('#q', 'both');
      assert.equal(await page.isVisible('tr[data-search*="existing"]'), false);
      assert.equal(await page.isVisible('tr[data-search^="both"]'), true);
      assert.match((await page.textContent('[data-filter-count]')) ?? '', /Showing 1 of 3/);
      assert.match(page.url(), /\?q=both$/, 'the filter is in the address, for a reload');
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });
});
