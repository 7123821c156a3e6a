import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Authenticator, effectiveMasterKey } from '../src/auth/authenticator.ts';
import { GatewayError } from '../src/errors.ts';
import { openDatabase } from '../src/store/db.ts';
import { STORE_MIGRATIONS } from '../src/store/migrations.ts';
import { createSecretBox } from '../src/store/secret.ts';
import { UsersRepo } from '../src/store/users-repo.ts';

/** A fresh in-memory store and an authenticator whose master key the test can change live. */
function setup() {
  const db = openDatabase(':memory:', STORE_MIGRATIONS);
  const users = new UsersRepo(db, createSecretBox(randomBytes(32)));
  const state: { master?: string } = {};
  const auth = new Authenticator({ users, masterKey: () => state.master });
  return { db, users, state, auth };
}

function assert401(fn: () => unknown, secret?: string): GatewayError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof GatewayError, 'expected a GatewayError');
  assert.equal(caught.status, 401);
  assert.equal(caught.code, 'invalid_api_key');
  assert.equal(caught.type, 'authentication_error');
  if (secret) assert.ok(!JSON.stringify(caught.toOpenAI()).includes(secret), 'the error must not echo the key');
  return caught;
}

test('with no master key and no users the gateway is open: anyone is an anonymous admin', (t) => {
  const { db, auth } = setup();
  t.after(() => db.close());
  assert.equal(auth.isOpen(), true);
  assert.deepEqual(auth.authenticate({}), { kind: 'anonymous', isAdmin: true, allow: [] });
  assert.equal(auth.authenticate({ authorization: 'Bearer sk-placeholder' }).kind, 'anonymous');
});

test('setting a master key locks the same instance at once', (t) => {
  const { db, auth, state } = setup();
  t.after(() => db.close());
  assert.equal(auth.isOpen(), true);
  state.master = 'sk-master-key-0123456789';
  assert.equal(auth.isOpen(), false);
  assert401(() => auth.authenticate({}));
  assert401(() => auth.authenticate({ authorization: 'Bearer sk-placeholder' }), 'sk-placeholder');
  assert.deepEqual(auth.authenticate({ authorization: 'Bearer sk-master-key-0123456789' }), {
    kind: 'master',
    isAdmin: true,
    allow: [],
  });
  assert.equal(auth.authenticate({ 'x-api-key': 'sk-master-key-0123456789' }).kind, 'master');
});

test('creating an admin user locks the same instance at once; its key works both ways', (t) => {
  const { db, auth, users } = setup();
  t.after(() => db.close());
  assert.equal(auth.isOpen(), true);
  const { key } = users.create({ name: 'root', role: 'admin' });
  assert.equal(auth.isOpen(), false);
  assert401(() => auth.authenticate({}));
  for (const headers of [{ authorization: `Bearer ${key}` }, { 'x-api-key': key }]) {
    const caller = auth.authenticate(headers);
    assert.equal(caller.kind, 'user');
    assert.equal(caller.user?.name, 'root');
    assert.equal(caller.isAdmin, true);
  }
});

test('a wrong key gets 401 without the key in the body', (t) => {
  const { db, auth, users } = setup();
  t.after(() => db.close());
  users.create({ name: 'alice' });
  const wrong = 'sk-this-is-definitely-not-valid-9876';
  const err = assert401(() => auth.authenticate({ authorization: `Bearer ${wrong}` }), wrong);
  assert.match(err.message, /Incorrect API key provided/);
  assert.ok(!err.message.includes('9876'), 'not even a hint of the key');
});

test('a disabled user gets 401 until re-enabled', (t) => {
  const { db, auth, users } = setup();
  t.after(() => db.close());
  const { user, key } = users.create({ name: 'bob', allow: ['fast'] });
  users.update(user.id, { enabled: false });
  assert401(() => auth.authenticate({ 'x-api-key': key }), key);
  users.update(user.id, { enabled: true });
  const caller = auth.authenticate({ 'x-api-key': key });
  assert.equal(caller.isAdmin, false);
  assert.deepEqual(caller.allow, ['fast']);
});

test('a rotated key stops working at once; the new one works', (t) => {
  const { db, auth, users } = setup();
  t.after(() => db.close());
  const { user, key: oldKey } = users.create({ name: 'carol' });
  const newKey = users.rotate(user.id);
  assert401(() => auth.authenticate({ authorization: `Bearer ${oldKey}` }), oldKey);
  assert.equal(auth.authenticate({ authorization: `Bearer ${newKey}` }).user?.id, user.id);
});

test('deleting the last user re-opens the gateway (there is then nobody to lock out)', (t) => {
  const { db, auth, users } = setup();
  t.after(() => db.close());
  const { user } = users.create({ name: 'dave' });
  assert.equal(auth.isOpen(), false);
  users.delete(user.id);
  assert.equal(auth.isOpen(), true);
});

test('authenticateAdmin refuses non-admin users with 403', (t) => {
  const { db, auth, users, state } = setup();
  t.after(() => db.close());
  state.master = 'sk-master-key-0123456789';
  const { key } = users.create({ name: 'erin' });
  assert.throws(
    () => auth.authenticateAdmin({ 'x-api-key': key }),
    (err: unknown) => err instanceof GatewayError && err.status === 403,
  );
  assert.equal(auth.authenticateAdmin({ 'x-api-key': 'sk-master-key-0123456789' }).kind, 'master');
  assert401(() => auth.authenticateAdmin({}));
});

test('the master key is the effective api_key, trimmed; blank values count as none', () => {
  assert.equal(effectiveMasterKey('sk-config-key'), 'sk-config-key');
  assert.equal(effectiveMasterKey('  sk-config-key '), 'sk-config-key');
  assert.equal(effectiveMasterKey('  '), undefined);
  assert.equal(effectiveMasterKey(''), undefined);
  assert.equal(effectiveMasterKey(undefined), undefined);
});

test('a verdict kept for one request holds only while the users and the master key are unchanged', (t) => {
  const { db, users, state, auth } = setup();
  t.after(() => db.close());
  state.master = 'sk-master-0123456789abcdef';
  const { user, key } = users.create({ name: 'erin' });
  const headers = { authorization: `Bearer ${key}` };
  const first = auth.authenticate(headers);
  assert.equal(first.user?.name, 'erin');
  // the route's second look at the same request gets the guard's verdict, not a new lookup
  assert.equal(auth.authenticate(headers), first);
  // a write to the users (here: disabling erin) between the guard and the route refuses the request
  users.update(user.id, { enabled: false });
  assert401(() => auth.authenticate(headers));
  users.update(user.id, { enabled: true });
  assert.equal(auth.authenticate(headers).user?.enabled, true);
  // so does a new master key for a request that came with the old one
  const asMaster = { authorization: `Bearer ${state.master}` };
  assert.equal(auth.authenticate(asMaster).kind, 'master');
  state.master = 'sk-master-fedcba9876543210';
  assert401(() => auth.authenticate(asMaster));
  // and a headers object whose key was changed is judged again
  const reused = { authorization: `Bearer ${key}` };
  assert.equal(auth.authenticate(reused).kind, 'user');
  reused.authorization = `Bearer ${state.master}`;
  assert.equal(auth.authenticate(reused).kind, 'master');
});
