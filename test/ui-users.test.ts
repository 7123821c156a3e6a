/**
 * The console's users tab over real HTTP: create a user (its key shown once and working
 * against the API, never in a page again), rotate, disable, delete, the allow-list picker and
 * quota fields (blank = none, decimal comma), refused forms re-rendered with the values and
 * nothing saved, the lockout guard shared with the admin API, CSRF on every form, IP aliases,
 * and names shaped like a script tag rendered as text.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';
import { utcDayNumber } from '../src/stats/period.ts';

const MASTER = 'ui-users-master-key-0123456789';
const XSS = '<script>alert(1)</script>';

/** The key of a key-once page. */
function keyOf(html: string): string {
  const key = /id="new-key"[^>]*value="([^"]+)"/.exec(html)?.[1];
  assert.ok(key && key.length >= 16, 'the page shows the key');
  return key;
}

async function modelsStatus(gw: TestGateway, key: string): Promise<{ status: number; ids: string[] }> {
  const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { data?: { id: string }[] };
  return { status: res.status, ids: (body.data ?? []).map((m) => m.id) };
}

const base = { role: 'user', enabled: 'on', quota_req_day: '', quota_cost_month: '', note: '' };

describe('console users tab', () => {
  let gw: TestGateway;
  let fake: FakeBackend;
  let ui: UiClient;
  before(async () => {
    fake = await startFake('vllm', { models: ['plain-model', 'other-model'] });
    gw = await startGateway([{ name: 'box', url: fake.url }], {
      api_key: MASTER,
      virtual_models: { fast: { box: 'plain-model' } },
    });
    ui = await UiClient.login(gw, MASTER);
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });
  const byName = (name: string) => gw.gateway.users.list().find((u) => u.name === name);

  test('create: the key is shown once, works against /v1/models, and never appears again', async () => {
    await ui.get('/ui/users/new');
    const res = await ui.post('/ui/users', {
      ...base,
      name: 'alice',
      quota_req_day: '100',
      quota_cost_month: '2,50',
      note: 'laptop',
    });
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /shown <strong>this once<\/strong>/);
    assert.match(html, /data-copy="#new-key"/, 'a copy button');
    const key = keyOf(html);
    const user = byName('alice')!;
    assert.equal(user.quota_req_day, 100);
    assert.equal(user.quota_cost_month, 2.5, 'a decimal comma is read as one');
    assert.equal(user.note, 'laptop');
    const models = await modelsStatus(gw, key);
    assert.equal(models.status, 200);
    assert.ok(models.ids.includes('fast'), models.ids.join());
    for (const page of ['/ui/users', `/ui/users/${user.id}`, '/ui']) {
      const again = await ui.html(page);
      assert.ok(!again.includes(key), `${page} never shows the key`);
    }
    const list = await ui.html('/ui/users');
    assert.match(list, /alice/);
    assert.ok(list.includes(user.key_hint), 'only the masked hint');
  });

  test('the allow-list picker offers aliases, backends and models; entries are saved and enforced', async () => {
    const form = await ui.html('/ui/users/new');
    for (const choice of ['fast', 'box', 'plain-model', 'other-model'])
      assert.match(form, new RegExp(`<option value="${choice}"`));
    assert.match(form, /<optgroup label="Chat aliases">/);
    const res = await ui.post('/ui/users', {
      ...base,
      name: 'picky',
      allow: ['fast', 'fast'],
      allow_text: 'custom-thing\nfast, box/plain-model',
    });
    const key = keyOf(await res.text());
    assert.deepEqual(
      byName('picky')!.allow,
      ['fast', 'custom-thing', 'box/plain-model'],
      'in order, without duplicates',
    );
    const models = await modelsStatus(gw, key);
    assert.deepEqual(models.ids.sort(), ['box/plain-model', 'fast'], 'the allow-list is enforced');
    const edit = await ui.html(`/ui/users/${byName('picky')!.id}`);
    assert.match(edit, /<input type="checkbox" name="allow" value="custom-thing" checked>/, 'entries as chips');
    assert.match(edit, /not known now/, 'an entry naming nothing known is flagged');
    // unticking a chip (no script) removes the entry; blank quotas mean none
    const save = await ui.post(`/ui/users/${byName('picky')!.id}`, {
      ...base,
      name: 'picky',
      allow: ['fast'],
      quota_req_day: ' ',
      quota_cost_month: '',
    });
    assert.equal(save.status, 303);
    assert.equal(save.headers.get('location'), '/ui/users?saved=updated&name=picky');
    const saved = byName('picky')!;
    assert.deepEqual(saved.allow, ['fast']);
    assert.equal(saved.quota_req_day, null);
    assert.equal(saved.quota_cost_month, null);
    assert.match(await ui.html('/ui/users?saved=updated&name=picky'), /Saved picky\./);
  });

  test('quota usage is shown as numbers and bars', async () => {
    await ui.get('/ui/users/new');
    await ui.post('/ui/users', { ...base, name: 'metered', quota_req_day: '10', quota_cost_month: '1' });
    const user = byName('metered')!;
    gw.gateway.callLog.quotas.count({ user_id: user.id, day: utcDayNumber(Date.now()), requests: 4, cost: 1 });
    const list = await ui.html('/ui/users');
    const row = list.slice(
      list.indexOf(`/ui/users/${user.id}"`),
      list.indexOf('</tr>', list.indexOf(`/ui/users/${user.id}"`)),
    );
    assert.match(row, /<strong>4<\/strong> of 10/);
    assert.match(row, /class="fill p-40"/);
    assert.match(row, /<strong>\$1\.00<\/strong> of \$1\.00/);
    assert.match(row, /limit reached/, 'a spent budget says so in text, not only colour');
  });

  test('rotate: a new key shown once; the old one stops working', async () => {
    const created = await ui.post('/ui/users', { ...base, name: 'rotor' });
    const oldKey = keyOf(await created.text());
    const user = byName('rotor')!;
    await ui.get(`/ui/users/${user.id}`);
    const res = await ui.post(`/ui/users/${user.id}/rotate`, {});
    assert.equal(res.status, 200);
    const newKey = keyOf(await res.text());
    assert.notEqual(newKey, oldKey);
    assert.equal((await modelsStatus(gw, oldKey)).status, 401);
    assert.equal((await modelsStatus(gw, newKey)).status, 200);
    assert.ok(!(await ui.html(`/ui/users/${user.id}`)).includes(newKey));
    // a pasted key that is too short: refused next to its field, the key unchanged
    const bad = await ui.post(`/ui/users/${user.id}/rotate`, { key: 'short' });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /id="rotate-key-error">At least 16 characters/);
    assert.equal((await modelsStatus(gw, newKey)).status, 200);
  });

  test('disable refuses the key, enable restores it; delete removes the user', async () => {
    const key = keyOf(await (await ui.post('/ui/users', { ...base, name: 'toggle' })).text());
    const user = byName('toggle')!;
    await ui.get('/ui/users');
    const off = await ui.post(`/ui/users/${user.id}/enabled`, { enabled: 'false' });
    assert.equal(off.status, 303);
    assert.equal(byName('toggle')!.enabled, false);
    assert.equal((await modelsStatus(gw, key)).status, 401);
    assert.match(await ui.html('/ui/users?saved=disabled&name=toggle'), /toggle is disabled/);
    await ui.post(`/ui/users/${user.id}/enabled`, { enabled: 'true' });
    assert.equal((await modelsStatus(gw, key)).status, 200);
    const del = await ui.post(`/ui/users/${user.id}/delete`, { from: 'edit' });
    assert.equal(del.status, 303);
    assert.equal(byName('toggle'), undefined);
    assert.equal((await modelsStatus(gw, key)).status, 401);
    assert.equal((await ui.get(`/ui/users/${user.id}`)).status, 404);
  });

  test("the console and the admin API change users through the gateway's one users service", async (t) => {
    const service = gw.gateway.usersService;
    const seen: string[] = [];
    const create = service.create.bind(service);
    service.create = (input) => {
      seen.push(input.name);
      return create(input);
    };
    t.after(() => {
      service.create = create;
    });
    await ui.get('/ui/users/new');
    assert.equal((await ui.post('/ui/users', { ...base, name: 'via-console' })).status, 200);
    const api = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'via-api' }),
    });
    assert.equal(api.status, 201);
    assert.deepEqual(seen, ['via-console', 'via-api']);
  });

  test('a pasted key on create is used as the key', async () => {
    const pasted = 'sk-pasted-key-for-the-console-0001';
    const res = await ui.post('/ui/users', { ...base, name: 'pasted', key: pasted });
    assert.equal(keyOf(await res.text()), pasted);
    assert.equal((await modelsStatus(gw, pasted)).status, 200);
    // the same key again: refused next to the field, and never echoed back into the page
    const dup = await ui.post('/ui/users', { ...base, name: 'pasted-2', key: pasted });
    assert.equal(dup.status, 400);
    const html = await dup.text();
    assert.match(html, /id="key-error">This key is already in use/);
    assert.ok(!html.includes(pasted));
    assert.equal(byName('pasted-2'), undefined);
  });

  test('refused creates re-render with the values, each problem next to its field, nothing saved', async () => {
    const before = gw.gateway.users.count();
    const cases: [Record<string, string | string[]>, string, RegExp][] = [
      [{ ...base, name: '  ', note: 'kept note' }, 'name', /Enter a name\./],
      [{ ...base, name: 'alice', note: 'kept note' }, 'name', /already exists/],
      [{ ...base, name: 'q1', quota_req_day: 'lots', note: 'kept note' }, 'quota_req_day', /whole number/],
      [{ ...base, name: 'q2', quota_req_day: '1.5', note: 'kept note' }, 'quota_req_day', /whole number/],
      [{ ...base, name: 'q3', quota_cost_month: '-2', note: 'kept note' }, 'quota_cost_month', /0 or more/],
      [{ ...base, name: 'q4', quota_cost_month: 'two', note: 'kept note' }, 'quota_cost_month', /amount in USD/],
      [{ ...base, name: 'q5', role: 'root', note: 'kept note' }, 'role', /Choose user or admin/],
    ];
    for (const [fields, field, message] of cases) {
      const res = await ui.post('/ui/users', fields);
      assert.equal(res.status, 400, `${field} ${JSON.stringify(fields)}`);
      const html = await res.text();
      const error = new RegExp(`<p class="error" id="${field}-error">([^<]*)</p>`).exec(html)?.[1] ?? '';
      assert.match(error, message, field);
      assert.match(
        html,
        new RegExp(
          `id="${field}"[^>]*aria-invalid="true"|aria-invalid="true"[^>]*id="${field}"|id="${field}"[\\s\\S]{0,300}aria-invalid="true"`,
        ),
      );
      assert.match(html, /Nothing was saved/);
      assert.match(html, />kept note<\/textarea>/, 'the values are kept');
      if (fields.quota_req_day) assert.ok(html.includes(`value="${fields.quota_req_day}"`));
    }
    const several = await (
      await ui.post('/ui/users', { ...base, name: '', quota_req_day: 'x', quota_cost_month: 'y' })
    ).text();
    for (const field of ['name', 'quota_req_day', 'quota_cost_month'])
      assert.match(several, new RegExp(`id="${field}-error"`), 'every problem at once');
    assert.equal(gw.gateway.users.count(), before, 'nothing was saved');
  });

  test('a refused edit changes nothing', async () => {
    const alice = byName('alice')!;
    await ui.post('/ui/users', { ...base, name: 'bob' });
    const res = await ui.post(`/ui/users/${alice.id}`, { ...base, name: 'bob', quota_req_day: '5', note: 'changed' });
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /id="name-error">A user with this name already exists/);
    assert.match(html, /value="bob"/);
    assert.deepEqual(byName('alice'), alice, 'no field was half-saved');
    const bad = await ui.post(`/ui/users/${alice.id}`, { ...base, name: 'alice-renamed', quota_cost_month: '1,2,3' });
    assert.equal(bad.status, 400);
    assert.deepEqual(byName('alice'), alice);
  });

  test('CSRF: every form without the token or with a wrong one is 403 and changes nothing', async () => {
    const target = byName('bob')!;
    await gw.gateway.ipAliases.replace({ '10.0.0.9': 'keep' });
    await ui.get('/ui/users');
    const forms: [string, Record<string, string>][] = [
      ['/ui/users', { ...base, name: 'csrf-made' }],
      [`/ui/users/${target.id}`, { ...base, name: 'csrf-renamed' }],
      [`/ui/users/${target.id}/enabled`, { enabled: 'false' }],
      [`/ui/users/${target.id}/rotate`, {}],
      [`/ui/users/${target.id}/delete`, {}],
      ['/ui/users/ip-aliases', { ip: '10.0.0.8', alias: 'csrf' }],
      ['/ui/users/ip-aliases/delete', { ip: '10.0.0.9' }],
    ];
    const users = JSON.stringify(gw.gateway.users.list());
    for (const [path, fields] of forms) {
      for (const csrf of ['', 'forged-token']) {
        const res = await ui.post(path, fields, { csrf });
        assert.equal(res.status, 403, `${path} with ${JSON.stringify(csrf)}`);
        assert.match(await res.text(), /CSRF/);
      }
    }
    assert.equal(JSON.stringify(gw.gateway.users.list()), users, 'no user changed');
    assert.deepEqual(gw.gateway.ipAliases.all(), { '10.0.0.9': 'keep' }, 'no alias changed');
    gw.gateway.ipAliases.replace({});
  });

  test('IP aliases: add with validation, rename, remove', async () => {
    await ui.get('/ui/users');
    const bad = await ui.post('/ui/users/ip-aliases', { ip: 'not-an-ip', alias: ' ' });
    assert.equal(bad.status, 400);
    const html = await bad.text();
    assert.match(html, /id="ip-error">&#39;not-an-ip&#39; is neither an IP address nor an IPv6 \/64 prefix/);
    assert.match(html, /id="alias-error">/);
    assert.match(html, /value="not-an-ip"/);
    assert.deepEqual(gw.gateway.ipAliases.all(), {});
    const ok = await ui.post('/ui/users/ip-aliases', { ip: ' 192.168.1.20 ', alias: 'desk' });
    assert.equal(ok.status, 303);
    await ui.post('/ui/users/ip-aliases', { ip: '2001:db8:1:2::/64', alias: 'laptop' });
    await ui.post('/ui/users/ip-aliases', { ip: '192.168.1.20', alias: 'desk-2' });
    assert.deepEqual(gw.gateway.ipAliases.all(), { '192.168.1.20': 'desk-2', '2001:db8:1:2::/64': 'laptop' });
    const list = await ui.html('/ui/users');
    assert.match(list, /desk-2/);
    const removed = await ui.post('/ui/users/ip-aliases/delete', { ip: '192.168.1.20' });
    assert.equal(removed.status, 303);
    assert.deepEqual(gw.gateway.ipAliases.all(), { '2001:db8:1:2::/64': 'laptop' });
    assert.equal((await ui.post('/ui/users/ip-aliases/delete', { ip: '192.168.1.20' })).status, 404);
  });

  test('a user named like a script tag renders as text everywhere', async () => {
    const res = await ui.post('/ui/users', { ...base, name: XSS, note: XSS, allow_text: XSS });
    const once = await res.text();
    assert.ok(!once.includes(XSS) && once.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    const user = byName(XSS)!;
    assert.ok(user, 'the name is stored as typed');
    for (const page of ['/ui/users', `/ui/users/${user.id}`]) {
      const html = await ui.html(page);
      assert.ok(!html.includes(XSS), `${page} escapes it`);
      assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), page);
      assert.doesNotMatch(html, /\sstyle="/, 'no inline style');
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    }
  });
});

describe('console users tab: the lockout guard (no master key)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway([]);
  });
  after(async () => {
    await gw.close();
  });

  test('while open, the first user must be an enabled admin; the last admin cannot be disabled, demoted or deleted', async () => {
    const open = new UiClient(gw.url);
    await open.get('/ui/users/new');
    const plain = await open.post('/ui/users', { ...base, name: 'first-plain' });
    assert.equal(plain.status, 409);
    assert.match(await plain.text(), /nobody could reach the admin API/);
    assert.equal(gw.gateway.users.count(), 0);
    const created = await open.post('/ui/users', { ...base, name: 'root', role: 'admin' });
    const key = keyOf(await created.text());
    const admin = gw.gateway.users.list()[0];
    const ui = await UiClient.login(gw, key);
    await ui.post('/ui/users', { ...base, name: 'someone' });
    await ui.get('/ui/users');
    const off = await ui.post(`/ui/users/${admin.id}/enabled`, { enabled: 'false' });
    assert.equal(off.status, 409);
    assert.match(await off.text(), /Nothing was changed/);
    const demote = await ui.post(`/ui/users/${admin.id}`, { ...base, name: 'root', role: 'user' });
    assert.equal(demote.status, 409);
    assert.match(await demote.text(), /nobody could reach the admin API/);
    const del = await ui.post(`/ui/users/${admin.id}/delete`, { from: 'edit' });
    assert.equal(del.status, 409);
    const after = gw.gateway.users.get(admin.id)!;
    assert.equal(after.enabled, true);
    assert.equal(after.role, 'admin');
    assert.equal((await ui.get('/ui/users')).status, 200, 'still logged in');
  });
});
