/**
 * One owner rule (auth/owner.ts) for everything a call leaves behind: `user:<id>` for a user's
 * key, `master` for the master key, `ip:<address>` for the anonymous callers of an open
 * gateway, each address its own; `ownerKind` reads it back. The media caller files its jobs
 * under the same owner the Responses API stores its responses under.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Authenticator } from '../src/auth/authenticator.ts';
import { ownerKind, ownerOf } from '../src/auth/owner.ts';
import { mediaCaller } from '../src/routes/media-caller.ts';
import { openDatabase } from '../src/store/db.ts';
import { STORE_MIGRATIONS } from '../src/store/migrations.ts';
import { createSecretBox } from '../src/store/secret.ts';
import { UsersRepo } from '../src/store/users-repo.ts';

function setup() {
  const users = new UsersRepo(openDatabase(':memory:', STORE_MIGRATIONS), createSecretBox(randomBytes(32)));
  const state: { master?: string } = {};
  return { users, state, auth: new Authenticator({ users, masterKey: () => state.master }) };
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

test('an open gateway: each client address owns its own, whatever key a client insists on', () => {
  const { auth } = setup();
  const anonymous = auth.authenticate(bearer('sk-placeholder'));
  assert.equal(anonymous.kind, 'anonymous');
  assert.equal(ownerOf(anonymous, '10.0.0.1'), 'ip:10.0.0.1');
  assert.equal(ownerOf(anonymous, '10.0.0.2'), 'ip:10.0.0.2');
  assert.equal(ownerOf(auth.authenticate({}), '::1'), 'ip:::1');
  assert.equal(ownerKind('ip:10.0.0.1'), 'anonymous');
});

test('a closed gateway: the master key owns as master, a user as user:<id>, from any address', () => {
  const { auth, users, state } = setup();
  state.master = 'sk-master-0123456789';
  const master = auth.authenticate(bearer(state.master));
  assert.equal(ownerOf(master, '10.0.0.1'), 'master');
  assert.equal(ownerOf(master, '10.0.0.2'), 'master');
  assert.equal(ownerKind('master'), 'master');
  const { user, key } = users.create({ name: 'alice' });
  const alice = auth.authenticate(bearer(key));
  assert.equal(ownerOf(alice, '10.0.0.1'), `user:${user.id}`);
  assert.equal(ownerOf(alice, '10.0.0.2'), `user:${user.id}`);
  assert.equal(ownerKind(`user:${user.id}`), 'user');
});

test('media jobs are filed under the same owner; open-mode callers are no admins for them', () => {
  const { auth, users, state } = setup();
  const anonymous = auth.authenticate({});
  const open = mediaCaller({ caller: anonymous, source: '10.0.0.1', userId: null }, '10.0.0.1');
  assert.equal(open.owner, ownerOf(anonymous, '10.0.0.1'));
  assert.equal(open.admin, false);
  state.master = 'sk-master-0123456789';
  const master = auth.authenticate(bearer(state.master));
  assert.equal(mediaCaller({ caller: master, source: 's', userId: null }, '10.0.0.1').owner, 'master');
  const { user, key } = users.create({ name: 'bob' });
  const bob = auth.authenticate(bearer(key));
  assert.equal(mediaCaller({ caller: bob, source: 'bob', userId: user.id }, '10.0.0.1').owner, `user:${user.id}`);
});
