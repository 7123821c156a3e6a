import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { GatewayError } from '../src/errors.ts';
import { openDatabase } from '../src/store/db.ts';
import { IpAliasesRepo } from '../src/store/ip-aliases-repo.ts';
import { STORE_MIGRATIONS } from '../src/store/migrations.ts';
import { createSecretBox } from '../src/store/secret.ts';
import { UsersRepo } from '../src/store/users-repo.ts';

function setup(t: { after: (fn: () => void) => void }) {
  const db = openDatabase(':memory:', STORE_MIGRATIONS);
  t.after(() => db.close());
  const box = createSecretBox(randomBytes(32));
  return { db, box, users: new UsersRepo(db, box), ipAliases: new IpAliasesRepo(db) };
}

const withStatus = (status: number, code?: string) => (err: unknown) =>
  err instanceof GatewayError && err.status === status && (code === undefined || err.code === code);

test('keys are stored only encrypted and as a digest; listings carry a hint, never the key', (t) => {
  const { db, box, users } = setup(t);
  const { user, key } = users.create({
    name: 'alice',
    allow: ['fast'],
    quota_req_day: 100,
    quota_cost_month: 5.5,
    note: 'n8n',
  });
  assert.equal(user.key_hint, `sk-…${key.slice(-4)}`);
  assert.deepEqual(
    { ...user, created_at: 0, updated_at: 0 },
    {
      id: user.id,
      name: 'alice',
      role: 'user',
      enabled: true,
      key_hint: user.key_hint,
      allow: ['fast'],
      quota_req_day: 100,
      quota_cost_month: 5.5,
      share: 1,
      max_inflight: null,
      note: 'n8n',
      created_at: 0,
      updated_at: 0,
    },
  );

  const row = db.prepare('SELECT * FROM users WHERE id = ?').get(user.id) as Record<string, unknown>;
  assert.ok(!JSON.stringify(row).includes(key), 'no column holds the key in clear');
  assert.equal(row.key_digest, box.digest(key));
  assert.equal(box.decrypt(String(row.key_cipher)), key);

  const listed = JSON.stringify(users.list());
  assert.ok(!listed.includes(key));
  assert.ok(!listed.includes(String(row.key_digest)));
  assert.ok(!listed.includes('key_cipher'));
});

test('findByKey finds the owner by digest, for generated and pasted keys', (t) => {
  const { users } = setup(t);
  const generated = users.create({ name: 'gen' });
  const pasted = users.create({ name: 'paste', key: 'my-pasted-key-123456' });
  assert.equal(pasted.key, 'my-pasted-key-123456');
  assert.equal(pasted.user.key_hint, '…3456');
  assert.equal(users.findByKey(generated.key)?.name, 'gen');
  assert.equal(users.findByKey('my-pasted-key-123456')?.name, 'paste');
  assert.equal(users.findByKey('my-pasted-key-12345'), undefined);
});

test('a pasted key must be at least 16 characters', (t) => {
  const { users } = setup(t);
  assert.throws(() => users.create({ name: 'x', key: 'short-key-15chr' }), withStatus(400));
  assert.equal(users.count(), 0);
});

test('duplicate names and keys are 409s that do not echo the key', (t) => {
  const { users } = setup(t);
  const a = users.create({ name: 'alice', key: 'shared-key-0123456789' });
  assert.throws(() => users.create({ name: 'alice' }), withStatus(409, 'user_exists'));
  assert.throws(
    () => users.create({ name: 'bob', key: 'shared-key-0123456789' }),
    (err: unknown) => withStatus(409, 'key_in_use')(err) && !(err as Error).message.includes('shared-key'),
  );
  const b = users.create({ name: 'bob' });
  assert.throws(() => users.update(b.user.id, { name: 'alice' }), withStatus(409, 'user_exists'));
  assert.throws(() => users.rotate(b.user.id, 'shared-key-0123456789'), withStatus(409, 'key_in_use'));
  assert.equal(users.findByKey(b.key)?.id, b.user.id, 'a refused rotation keeps the old key');
  assert.equal(users.findByKey(a.key)?.id, a.user.id);
});

test('update applies a partial patch; null clears a quota', (t) => {
  const { users } = setup(t);
  const { user } = users.create({ name: 'alice', quota_req_day: 10, quota_cost_month: 2 });
  const updated = users.update(user.id, { role: 'admin', quota_req_day: null, note: 'lead' });
  assert.equal(updated.role, 'admin');
  assert.equal(updated.quota_req_day, null);
  assert.equal(updated.quota_cost_month, 2);
  assert.equal(updated.note, 'lead');
  assert.equal(updated.name, 'alice');
});

test('unknown ids are 404s', (t) => {
  const { users } = setup(t);
  assert.equal(users.get(42), undefined);
  assert.throws(() => users.update(42, { note: 'x' }), withStatus(404, 'user_not_found'));
  assert.throws(() => users.delete(42), withStatus(404, 'user_not_found'));
  assert.throws(() => users.rotate(42), withStatus(404, 'user_not_found'));
});

test('count and hasAdmin follow creates, disables and deletes', (t) => {
  const { users } = setup(t);
  assert.equal(users.count(), 0);
  assert.equal(users.hasAdmin(), false);
  const u = users.create({ name: 'u' });
  assert.equal(users.hasAdmin(), false);
  const a = users.create({ name: 'a', role: 'admin' });
  assert.equal(users.count(), 2);
  assert.equal(users.hasAdmin(), true);
  users.update(a.user.id, { enabled: false });
  assert.equal(users.hasAdmin(), false, 'a disabled admin does not count');
  users.delete(u.user.id);
  assert.equal(users.count(), 1);
});

test('IP aliases are replaced as a whole', (t) => {
  const { ipAliases } = setup(t);
  assert.deepEqual(ipAliases.all(), {});
  ipAliases.replace({ '10.0.0.2': 'nas', '2001:db8:1:2::/64': 'laptop' });
  assert.deepEqual(ipAliases.all(), { '10.0.0.2': 'nas', '2001:db8:1:2::/64': 'laptop' });
  ipAliases.replace({ '10.0.0.3': 'desk' });
  assert.deepEqual(ipAliases.all(), { '10.0.0.3': 'desk' });
});
