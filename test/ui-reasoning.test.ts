/**
 * The console's reasoning tab over real HTTP, on a real gateway in front of two fake backends:
 * the rule list (configured rules, then the built-in ones read-only), the resolver's rule and
 * body checked against what a real call through the gateway sends the backend, reordering that
 * makes the resolver (and the calls) pick the other rule, add / edit / disable / delete / copy,
 * config validation next to the field with nothing saved, a change from a stale page refused,
 * CSRF on every form, reset to config.yaml, and globs and model ids shaped like a script tag
 * rendered as text.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_REASONING_RULES } from '../src/bridges/reasoning/rules.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'ui-reasoning-master-key-0123456789';
const XSS = '<script>alert(1)</script>';
const FILE_RULES = [
  { model: 'qwen3*', backends: ['a'], mechanism: 'nothink_token' as const, params: { token: '/no_think' } },
  { model: '*qwen3*', mechanism: 'enable_thinking' as const },
];

const decode = (html: string) =>
  html
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** What the resolver shows: the rule's place, the header, and the two bodies. */
function resolverOf(html: string): { rule?: number; applied: string; client: unknown; upstream: unknown } {
  const rule = /Rule <a href="#rule-(\d+)">/.exec(html)?.[1];
  const applied = /<dt>x-reasoning-control<\/dt><dd class="mono">([^<]*)<\/dd>/.exec(html)?.[1] ?? '';
  const bodies = [...html.matchAll(/<pre class="rs-json" tabindex="0"><code>([\s\S]*?)<\/code><\/pre>/g)].map((m) =>
    JSON.parse(decode(m[1])),
  );
  return { rule: rule ? Number(rule) : undefined, applied: decode(applied), client: bodies[0], upstream: bodies[1] };
}

const fingerprintOf = (html: string) => /name="v" value="([^"]+)"/.exec(html)![1];

describe('console reasoning tab', () => {
  let gw: TestGateway;
  let a: FakeBackend;
  let b: FakeBackend;
  let ui: UiClient;
  const rules = () => gw.gateway.config().reasoning_rules;
  const resolverPage = (q: string) => ui.html(`/ui/reasoning?${q}`);

  /** A chat through the gateway like the resolver's sample; the body the backend got. */
  const realCall = async (model: string, reasoning: string, fake: FakeBackend) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages: [{ role: 'user', content: 'Hello! In one sentence: why is the sky blue?' }],
        max_tokens: 256,
        reasoning,
      }),
    });
    await res.text();
    const sent = fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions')).at(-1)!.body;
    return { header: res.headers.get('x-reasoning-control'), sent };
  };

  before(async () => {
    a = await startFake('llamacpp', { models: ['qwen3-8b', XSS] });
    b = await startFake('vllm', { models: ['Qwen/Qwen3-8B'] });
    gw = await startGateway(
      [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url },
      ],
      {
        api_key: MASTER,
        reasoning_rules: FILE_RULES,
        virtual_models: { onA: { a: 'qwen3-8b' } },
        alias_defaults: { onA: { reasoning: 'off', sampling_defaults: { temperature: 0.6 } } },
      },
    );
    ui = await UiClient.login(gw, MASTER);
  });
  after(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
  });

  test('the list: configured rules first, then every built-in rule, read-only', async () => {
    const html = await ui.html('/ui/reasoning');
    assert.match(html, /Your rules <span class="muted">— <code>reasoning_rules<\/code>, from config.yaml/);
    const ids = [...html.matchAll(/<tr id="rule-(\d+)"/g)].map((m) => Number(m[1]));
    assert.deepEqual(
      ids,
      Array.from({ length: 2 + DEFAULT_REASONING_RULES.length }, (_, i) => i + 1),
    );
    assert.equal(
      [...html.matchAll(/href="\/ui\/reasoning\/edit\?i=/g)].length,
      2,
      'only configured rules are editable',
    );
    assert.equal([...html.matchAll(/action="\/ui\/reasoning\/copy"/g)].length, DEFAULT_REASONING_RULES.length);
    assert.match(html, /aria-label="Move rule 1 up" disabled/);
    assert.match(html, /aria-label="Move rule 2 down" disabled/);
    assert.doesNotMatch(html, /\sstyle="/);
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/);
  });

  test('the resolver shows the rule that applies and exactly the body a real call sends', async () => {
    const shown = resolverOf(await resolverPage('backend=a&model=qwen3-8b&switch=off&alias=onA'));
    assert.equal(shown.rule, 1);
    assert.equal(shown.applied, 'off:nothink_token');
    const real = await realCall('onA', 'off', a);
    assert.equal(real.header, shown.applied);
    assert.deepEqual(real.sent, shown.upstream, 'the resolver runs the gateway’s own transform');
    assert.equal((shown.upstream as { temperature: number }).temperature, 0.6, 'the alias’s sampling default');

    const onB = resolverOf(await resolverPage('backend=b&model=Qwen%2FQwen3-8B&switch=on'));
    assert.equal(onB.rule, 2, 'rule 1 is for backend a only');
    assert.deepEqual((onB.upstream as { chat_template_kwargs: unknown }).chat_template_kwargs, {
      enable_thinking: true,
    });
    assert.equal(
      (onB.upstream as { reasoning?: unknown }).reasoning,
      undefined,
      'the gateway-only field never reaches a backend',
    );

    const builtin = resolverOf(await resolverPage('backend=b&model=openai%2Fgpt-oss-20b&switch=off'));
    assert.ok(builtin.rule! > 2, 'a built-in rule');
    assert.match(
      await resolverPage('backend=b&model=openai%2Fgpt-oss-20b&switch=off'),
      /does not list <code>openai\/gpt-oss-20b<\/code>/,
    );
    const none = await resolverPage('backend=a&model=mystery&switch=off');
    assert.match(none, /No rule matches/);
    assert.equal(resolverOf(none).applied, 'unsupported');
  });

  test('reorder with up / down: the resolver and real calls pick the other rule', async () => {
    const page = await resolverPage('backend=a&model=qwen3-8b&switch=off');
    const res = await ui.post('/ui/reasoning/move', {
      i: '1',
      dir: 'up',
      v: fingerprintOf(page),
      rq: 'backend=a&model=qwen3-8b&switch=off',
    });
    assert.equal(res.status, 303);
    assert.equal(
      res.headers.get('location'),
      '/ui/reasoning?saved=moved&n=1&model=qwen3-8b&backend=a&switch=off#rules',
    );
    assert.deepEqual(
      rules().map((r) => r.mechanism),
      ['enable_thinking', 'nothink_token'],
    );
    const after = await ui.html(res.headers.get('location')!);
    assert.match(after, /Moved the rule: it is rule 1 now/);
    const shown = resolverOf(after);
    assert.equal(shown.rule, 1);
    assert.equal(shown.applied, 'off:enable_thinking');
    assert.equal((await realCall('onA', 'off', a)).header, 'off:enable_thinking');
    assert.match(after, /<tr id="rule-1" class="rs-applies">/);
    // and back down
    const down = await ui.post('/ui/reasoning/move', { i: '0', dir: 'down', v: fingerprintOf(after) });
    assert.equal(down.status, 303);
    assert.deepEqual(
      rules().map((r) => r.mechanism),
      ['nothink_token', 'enable_thinking'],
    );
    const edge = await ui.post('/ui/reasoning/move', {
      i: '0',
      dir: 'up',
      v: fingerprintOf(await ui.html('/ui/reasoning')),
    });
    assert.equal(edge.status, 400, 'the first rule cannot go up');
  });

  test('add a rule at a position, edit it, disable it (skipped), delete it', async () => {
    const form = await ui.html('/ui/reasoning/new');
    const v = fingerprintOf(form);
    const add = await ui.post('/ui/reasoning/save', {
      i: '',
      v,
      position: '0',
      model: '*qwen3-8b',
      backends: 'a',
      backends_other: '',
      mechanism: 'prefill',
      params: '',
      enabled: 'on',
    });
    assert.equal(add.status, 303);
    assert.deepEqual(rules()[0], { model: '*qwen3-8b', backends: ['a'], mechanism: 'prefill' });
    assert.equal(resolverOf(await resolverPage('backend=a&model=qwen3-8b&switch=off')).applied, 'off:prefill');

    const edit = await ui.html('/ui/reasoning/edit?i=0');
    assert.match(edit, /name="backends" value="a" checked/);
    const saved = await ui.post('/ui/reasoning/save', {
      i: '0',
      v: fingerprintOf(edit),
      position: '0',
      model: '*qwen3-8b',
      backends: ['a', 'b'],
      backends_other: 'later-box',
      mechanism: 'reasoning_effort',
      params: '{"off": "low", "efforts": ["low", "high"]}',
      enabled: 'on',
    });
    assert.equal(saved.status, 303);
    assert.deepEqual(rules()[0], {
      model: '*qwen3-8b',
      backends: ['a', 'b', 'later-box'],
      mechanism: 'reasoning_effort',
      params: { off: 'low', efforts: ['low', 'high'] },
    });
    assert.match(
      await ui.html('/ui/reasoning/edit?i=0'),
      /value="later-box" checked> <span class="mono">later-box<\/span> <span class="muted">\(not in the fleet\)/,
    );

    const list = await ui.html('/ui/reasoning');
    const off = await ui.post('/ui/reasoning/toggle', { i: '0', v: fingerprintOf(list) });
    assert.equal(off.status, 303);
    assert.equal(rules()[0].enabled, false);
    const skipped = await resolverPage('backend=a&model=qwen3-8b&switch=off');
    assert.equal(resolverOf(skipped).applied, 'off:nothink_token', 'a disabled rule is skipped');
    assert.match(skipped, /<tr id="rule-1" class=" rs-off">/);
    const on = await ui.post('/ui/reasoning/toggle', { i: '0', v: fingerprintOf(skipped) });
    assert.equal(on.status, 303);
    assert.equal(rules()[0].enabled, undefined);

    const del = await ui.post('/ui/reasoning/delete', { i: '0', v: fingerprintOf(await ui.html('/ui/reasoning')) });
    assert.equal(del.status, 303);
    assert.deepEqual(rules(), FILE_RULES);
  });

  test('invalid rules: config validation next to the field (params by name), nothing saved', async () => {
    const before = JSON.stringify(rules());
    const v = fingerprintOf(await ui.html('/ui/reasoning/new'));
    const res = await ui.post('/ui/reasoning/save', {
      i: '',
      v,
      position: '2',
      model: '',
      mechanism: 'nothink_token',
      params: '{"tokn": "/x", "token": 3}',
      enabled: 'on',
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /<p class="error" id="model-error">Must be a non-empty glob string/);
    assert.match(
      html,
      /<p class="error" id="params-error">“tokn” unknown param \(nothink_token reads token, on_token\)/,
    );
    assert.match(html, /“token” must be a non-empty string/);
    assert.match(html, /id="params"[^>]*aria-invalid="true"/);
    const unknownMech = await ui.post('/ui/reasoning/save', {
      i: '',
      v,
      position: '2',
      model: '*',
      mechanism: 'magic',
      params: '',
      enabled: 'on',
    });
    assert.equal(unknownMech.status, 400);
    assert.match(await unknownMech.text(), /<p class="error" id="mechanism-error">Must be one of enable_thinking/);
    const badJson = await ui.post('/ui/reasoning/save', {
      i: '',
      v,
      position: '2',
      model: '*',
      mechanism: 'none',
      params: '{oops',
      enabled: 'on',
    });
    assert.equal(badJson.status, 400);
    assert.match(await badJson.text(), /id="params-error">Not valid JSON/);
    assert.equal(JSON.stringify(rules()), before);
  });

  test('a change posted from a page that showed another list is refused; nothing changes', async () => {
    const stale = fingerprintOf(await ui.html('/ui/reasoning'));
    const fresh = await ui.post('/ui/reasoning/copy', { i: '0', v: stale });
    assert.equal(fresh.status, 303);
    assert.deepEqual(
      rules().at(-1),
      DEFAULT_REASONING_RULES[0],
      'a copy of the first built-in, after the configured ones',
    );
    const before = JSON.stringify(rules());
    for (const [path, fields] of [
      ['/ui/reasoning/delete', { i: '0' }],
      ['/ui/reasoning/move', { i: '1', dir: 'up' }],
      ['/ui/reasoning/toggle', { i: '0' }],
    ] as const) {
      const res = await ui.post(path, { ...fields, v: stale });
      assert.equal(res.status, 409, path);
      assert.match(await res.text(), /The rule list changed since this page was shown/);
    }
    const save = await ui.post('/ui/reasoning/save', {
      i: '0',
      v: stale,
      position: '0',
      model: 'x*',
      mechanism: 'none',
      params: '',
      enabled: 'on',
    });
    assert.equal(save.status, 409);
    assert.equal(JSON.stringify(rules()), before);
  });

  test('CSRF: every form without the token or with a wrong one is refused with 403 and changes nothing', async () => {
    const v = fingerprintOf(await ui.html('/ui/reasoning'));
    const forms: [string, Record<string, string>][] = [
      [
        '/ui/reasoning/save',
        { i: '', v, position: '0', model: 'forged*', mechanism: 'none', params: '', enabled: 'on' },
      ],
      [
        '/ui/reasoning/save',
        { i: '0', v, position: '0', model: 'forged*', mechanism: 'none', params: '', enabled: 'on' },
      ],
      ['/ui/reasoning/move', { i: '1', dir: 'up', v }],
      ['/ui/reasoning/toggle', { i: '0', v }],
      ['/ui/reasoning/delete', { i: '0', v }],
      ['/ui/reasoning/copy', { i: '3', v }],
      ['/ui/reasoning/reset', {}],
    ];
    for (const [path, fields] of forms) {
      for (const csrf of ['', 'forged-token']) {
        const before = JSON.stringify([rules(), gw.gateway.settings.get('reasoning_rules')]);
        const res = await ui.post(path, fields, { csrf });
        assert.equal(res.status, 403, `${path} with token ${JSON.stringify(csrf)}`);
        assert.equal(
          JSON.stringify([rules(), gw.gateway.settings.get('reasoning_rules')]),
          before,
          `${path}: nothing changed`,
        );
      }
    }
  });

  test('the stored list says it overrides config.yaml; reset brings config.yaml’s back', async () => {
    const html = await ui.html('/ui/reasoning');
    assert.match(html, /stored, overriding config.yaml's list/);
    assert.match(html, /Reset to config.yaml&#39;s rules/);
    const res = await ui.post('/ui/reasoning/reset', {});
    assert.equal(res.status, 303);
    assert.deepEqual(rules(), FILE_RULES);
    assert.equal(gw.gateway.settings.get('reasoning_rules'), undefined);
  });

  test('globs and model ids shaped like a script tag render as text', async () => {
    const v = fingerprintOf(await ui.html('/ui/reasoning/new'));
    assert.equal(
      (
        await ui.post('/ui/reasoning/save', {
          i: '',
          v,
          position: '0',
          model: `${XSS}*`,
          backends: 'a',
          backends_other: '<b>x</b>',
          mechanism: 'none',
          params: '',
          enabled: 'on',
        })
      ).status,
      303,
    );
    for (const path of [
      '/ui/reasoning',
      `/ui/reasoning?backend=a&model=${encodeURIComponent(XSS)}&switch=off`,
      '/ui/reasoning/edit?i=0',
    ]) {
      const html = await ui.html(path);
      assert.ok(!html.includes(XSS), `${path}: no raw script tag`);
      assert.ok(!html.includes('<b>x</b>'), `${path}: no raw tag`);
      assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), `${path}: shown as text`);
    }
    assert.equal(resolverOf(await resolverPage(`backend=a&model=${encodeURIComponent(XSS)}x&switch=off`)).rule, 1);
  });
});
