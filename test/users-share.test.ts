/**
 * Users' `share` (fair-share weight, > 0, default 1) and `max_inflight` (calls at once, null or
 * 0 = no cap): stored (and added to an older store.db), through the admin API with its 400s
 * naming the field, through the console form (blank = the default, refused values next to their
 * field, nothing saved) and its table, and as the scheduler reads them (`ticketUserOf`).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { ticketUserOf } from '../src/routes/ticket-user.ts';
import { openDatabase } from '../src/store/db.ts';
import { STORE_MIGRATIONS } from '../src/store/migrations.ts';
import { createSecretBox } from '../src/store/secret.ts';
import { UsersRepo } from '../src/store/users-repo.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { adminApi } from './helpers/admin-api.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'users-share-master-key-0123456789';
const tempStore = tempDirs('llmgw-share-');

describe('share and max_inflight', () => {
  let gw: TestGateway;
  let fake: FakeBackend;
  let ui: UiClient;
  const api = adminApi(() => gw.url, MASTER);
  before(async () => {
    fake = await startFake('vllm', { models: ['m'] });
    gw = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER });
    ui = await UiClient.login(gw, MASTER);
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });
  const byName = (name: string) => gw.gateway.users.list().find((u) => u.name === name);
  /** The scheduler's view of the caller holding `key`, as a route builds it. */
  const ticketUser = (key: string) =>
    ticketUserOf(gw.gateway.authenticator.authenticate({ authorization: `Bearer ${key}` }));

  test('admin API: defaults, create, patch and clear round-trip; the scheduler reads them', async () => {
    const plain = await api('POST', '/admin/api/users', { name: 'plain' });
    assert.equal(plain.status, 201);
    assert.equal(plain.json.share, 1);
    assert.equal(plain.json.max_inflight, null);
    assert.deepEqual(ticketUser(plain.json.key), { key: `u:${plain.json.id}`, share: 1, maxInflight: 0 });

    const heavy = await api('POST', '/admin/api/users', { name: 'heavy', share: 2.5, max_inflight: 3 });
    assert.equal(heavy.status, 201);
    const got = await api('GET', `/admin/api/users/${heavy.json.id}`);
    assert.equal(got.json.share, 2.5);
    assert.equal(got.json.max_inflight, 3);
    assert.deepEqual(ticketUser(heavy.json.key), { key: `u:${heavy.json.id}`, share: 2.5, maxInflight: 3 });

    const patched = await api('PATCH', `/admin/api/users/${heavy.json.id}`, { share: 0.5, max_inflight: null });
    assert.equal(patched.status, 200);
    assert.equal(patched.json.share, 0.5);
    assert.equal(patched.json.max_inflight, null);
    assert.deepEqual(ticketUser(heavy.json.key), { key: `u:${heavy.json.id}`, share: 0.5, maxInflight: 0 }, 'no cap');
    const zero = await api('PATCH', `/admin/api/users/${heavy.json.id}`, { max_inflight: 0 });
    assert.equal(zero.json.max_inflight, 0);
    assert.equal(ticketUser(heavy.json.key).maxInflight, 0, '0 is no cap too');

    const listed = (await api('GET', '/admin/api/users')).json.data.find((u: { name: string }) => u.name === 'heavy');
    assert.equal(listed.share, 0.5);
    assert.equal(ticketUserOf({ kind: 'master', isAdmin: true, allow: [] }).key, 'master');
  });

  test('admin API: bad values are 400s naming the field, and change nothing', async () => {
    const { json: user } = await api('POST', '/admin/api/users', { name: 'strict', share: 2 });
    const cases: [unknown, string][] = [
      [{ share: 0 }, 'share'],
      [{ share: -1 }, 'share'],
      [{ share: '2' }, 'share'],
      [{ share: null }, 'share'],
      [{ share: 1e6 }, 'share'],
      [{ max_inflight: 1.5 }, 'max_inflight'],
      [{ max_inflight: -1 }, 'max_inflight'],
      [{ max_inflight: '3' }, 'max_inflight'],
    ];
    for (const [body, param] of cases) {
      const res = await api('PATCH', `/admin/api/users/${user.id}`, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.json.error.param, param, res.text);
      assert.equal(res.json.error.type, 'invalid_request_error');
      const created = await api('POST', '/admin/api/users', { name: `new-${param}`, ...(body as object) });
      assert.equal(created.status, 400, `create ${JSON.stringify(body)}`);
    }
    assert.equal(byName('strict')!.share, 2, 'unchanged');
  });

  test('console: the form saves them (blank = default), refuses bad ones by their field, lists them', async () => {
    await ui.get('/ui/users/new');
    const base = { role: 'user', enabled: 'on', quota_req_day: '', quota_cost_month: '', note: '' };
    const created = await ui.post('/ui/users', { ...base, name: 'formed', share: '1,5', max_inflight: '4' });
    assert.equal(created.status, 200, 'the key-once page');
    const user = byName('formed')!;
    assert.equal(user.share, 1.5, 'a decimal comma');
    assert.equal(user.max_inflight, 4);

    const edit = await ui.html(`/ui/users/${user.id}`);
    assert.match(edit, /id="share" name="share" type="text" inputmode="decimal" value="1.5"/);
    assert.match(edit, /id="max_inflight" name="max_inflight" type="text" inputmode="numeric" value="4"/);
    const list = await ui.html('/ui/users');
    const at = list.indexOf(`/ui/users/${user.id}"`);
    const row = list.slice(at, list.indexOf('</tr>', at));
    assert.match(row, /class="sharing"><span[^>]*>share 1.5<\/span> · <span[^>]*>≤ 4 at once<\/span>/);

    for (const [field, value, message] of [
      ['share', '0', /above 0/],
      ['share', 'lots', /number above 0/],
      ['max_inflight', '2.5', /whole number/i],
      ['max_inflight', 'x', /whole number/i],
      ['max_inflight', '-3', /0 or more/],
    ] as const) {
      const fields = { ...base, name: 'formed', share: '1.5', max_inflight: '4', [field]: value };
      const bad = await ui.post(`/ui/users/${user.id}`, fields);
      assert.equal(bad.status, 400, `${field}=${value}`);
      const html = await bad.text();
      assert.match(html, new RegExp(`id="${field}-error">[^<]*`), `${field}=${value}`);
      assert.match(html.slice(html.indexOf(`id="${field}-error"`)), message);
      assert.match(html, new RegExp(`id="${field}"[^>]*value="${value}"`), 'the typed value is kept');
    }
    assert.equal(byName('formed')!.share, 1.5, 'nothing saved');

    const cleared = await ui.post(`/ui/users/${user.id}`, { ...base, name: 'formed', share: '', max_inflight: '' });
    assert.equal(cleared.status, 303);
    assert.equal(byName('formed')!.share, 1, 'blank share: 1');
    assert.equal(byName('formed')!.max_inflight, null, 'blank cap: none');
    const blank = await ui.html(`/ui/users/${user.id}`);
    assert.match(blank, /id="share" name="share" type="text" inputmode="decimal" value=""/);
  });
});

test('a store.db from before gives its users share 1 and no cap', () => {
  const dir = tempStore();
  const file = join(dir, 'store.db');
  const box = createSecretBox(randomBytes(32));
  const old = openDatabase(
    file,
    STORE_MIGRATIONS.filter((m) => m.version < 5),
  );
  old
    .prepare(
      `INSERT INTO users (name, role, key_digest, key_cipher, key_hint, created_at, updated_at)
    VALUES ('old', 'user', 'd', 'c', 'sk-…0000', 0, 0)`,
    )
    .run();
  old.close();
  const db = openDatabase(file, STORE_MIGRATIONS);
  try {
    const [user] = new UsersRepo(db, box).list();
    assert.equal(user.share, 1);
    assert.equal(user.max_inflight, null);
  } finally {
    db.close();
  }
});
