/**
 * A media job is charged to its caller in the scheduler's fair share, like a chat call: its
 * ticket carries the same `user` (routes/ticket-user.ts), so the seconds its lease holds count
 * against that user. Read off the real scheduler's `acquire`, wrapped to record its tickets.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Ticket } from '../src/scheduler/index.ts';
import { call, createUser, MASTER, startMediaRig, type MediaRig } from './helpers/media-gateway.ts';

describe("a media job's ticket", () => {
  let rig: MediaRig;
  const tickets: Ticket[] = [];

  before(async () => {
    rig = await startMediaRig();
    const scheduler = rig.gw.gateway.scheduler;
    const acquire = scheduler.acquire.bind(scheduler);
    scheduler.acquire = (ticket) => {
      tickets.push(ticket);
      return acquire(ticket);
    };
  });
  after(async () => rig?.close());

  test('carries the user who asked for it: a user key, the master key', async () => {
    const alice = await createUser(rig.url, 'alice');
    const bob = await createUser(rig.url, 'bob');
    for (const key of [alice, bob, MASTER]) {
      const res = await call(rig.url, 'POST', '/v1/images/generations', key, { model: 'sd15', prompt: 'a lighthouse' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    const users = tickets.filter((t) => t.alias === 'sd15').map((t) => t.user?.key);
    assert.equal(users.length, 3);
    assert.match(users[0] ?? '', /^u:\d+$/);
    assert.match(users[1] ?? '', /^u:\d+$/);
    assert.notEqual(users[0], users[1], 'one fair-share user per gateway user');
    assert.equal(users[2], 'master');
  });
});
