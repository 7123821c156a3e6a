/**
 * The pure parts of the fair share: FairShare's virtual times (charge at grant, correction at
 * release, the start of a user that becomes active, forgetting idle users, caps), the waiter
 * index's designation with a `runnable` test, and the queue position in the fair order.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairShare } from '../src/scheduler/fair-share.ts';
import { designateInGroup } from '../src/scheduler/groups.ts';
import { compareMembers } from '../src/scheduler/ordering.ts';
import type { BackendSlots, GroupSlots } from '../src/scheduler/slots.ts';
import type { Lease, TicketUser } from '../src/scheduler/index.ts';
import { WaiterIndex, typeKeysByBackend, type Waiter } from '../src/scheduler/waiters.ts';
import { candidates, schedulerHarness, settle } from './helpers/scheduler-harness.ts';

const user = (key: string, more: Partial<TicketUser> = {}): TicketUser => ({ key, share: 1, maxInflight: 0, ...more });
const A = user('u:a');
const B = user('u:b');

describe('FairShare', () => {
  it('charges the estimate at grant and corrects it to the seconds held, per share', () => {
    const fair = new FairShare();
    const half = user('u:half', { share: 2 });
    fair.granted(half, 4);
    assert.equal(fair.virtualTime('u:half'), 2);
    fair.waiterAdded(half); // stays active after the release
    fair.released('u:half', 10, 4);
    assert.equal(fair.virtualTime('u:half'), 5, '10 s held at share 2');
  });

  it('a user that becomes active starts at the smallest virtual time of the active ones, less advance charges', () => {
    const fair = new FairShare();
    fair.granted(A, 30); // A's lease still running: 30 s charged in advance
    fair.waiterAdded(A);
    fair.released('u:a', 20, 30); // it held 20 s: A at 20, and still waiting for more
    fair.granted(A, 5); // A's next lease: 25, 5 of them in advance
    fair.granted(B, 10);
    assert.equal(fair.virtualTime('u:b'), 30, 'B started at 20, where A’s running lease started, then its 10');
    const c = user('u:c');
    fair.waiterAdded(c);
    assert.equal(fair.virtualTime('u:c'), 20, 'the smallest: A’s 20 (B’s 30 less its 10 in advance: 20 too)');
  });

  it('forgets idle users at the next activation of another, and keeps a returning one’s debt until then', () => {
    const fair = new FairShare();
    fair.granted(A, 5);
    fair.granted(B, 1);
    fair.released('u:a', 50, 5); // A idle now, vt 50
    assert.equal(fair.size, 2);
    fair.waiterAdded(A); // back before anyone else activated: its 50 s stand
    assert.equal(fair.virtualTime('u:a'), 50);
    fair.waiterRemoved('u:a');
    fair.waiterAdded(user('u:c'));
    assert.deepEqual(Object.keys(fair.snapshot()).sort(), ['u:b', 'u:c'], 'A forgotten');
  });

  it('caps: the ticket’s max_inflight for a new call, the latest for waiters; bad values: no cap, share 1', () => {
    const fair = new FairShare();
    const capped = user('u:a', { maxInflight: 1 });
    assert.equal(fair.canStart(capped), true);
    fair.granted(capped, 1);
    assert.equal(fair.canStart(capped), false);
    assert.equal(fair.canStartKey('u:a'), false);
    assert.equal(fair.canStart({ ...capped, maxInflight: 2 }), true, 'a raised cap applies to the new call');
    assert.equal(fair.released('u:a', 1, 1), true, 'it was at its cap');
    assert.equal(fair.canStartKey('u:a'), true);
    const odd = user('u:odd', { share: Number.NaN, maxInflight: -3 });
    fair.granted(odd, 2);
    fair.granted(odd, 2);
    assert.equal(fair.canStartKey('u:odd'), true);
    assert.equal(fair.snapshot()['u:odd'].vt, 4, 'share 1 (and it started at 0: the idle u:a was forgotten)');
  });
});

/** A bare waiter of `user` for the index tests. */
function waiter(seq: number, owner: TicketUser, asks: string[], enqueuedAt = 0): Waiter {
  return {
    seq,
    alias: 'x',
    user: owner,
    enqueuedAt,
    deadline: Infinity,
    typeKeysByBackend: typeKeysByBackend(candidates(...asks)),
    resolve: (_: Lease) => {},
    reject: () => {},
    settled: false,
    timer: undefined,
  };
}

describe('WaiterIndex.designate', () => {
  const options = { lastTypeKey: undefined, now: 1_000, affinityMaxWaitMs: 10_000 };

  it('passes over waiters whose type key is not runnable now, unless overdue', () => {
    const index = new WaiterIndex(new FairShare());
    const cold = waiter(1, A, ['gpu/m1']);
    const warm = waiter(2, A, ['gpu/m2']);
    index.add(cold);
    index.add(warm);
    const runnable = (typeKey: string) => typeKey === 'm2';
    assert.equal(index.designate('gpu', { ...options, runnable })?.waiter, warm);
    assert.equal(index.designate('gpu', { ...options, now: 20_000, runnable })?.waiter, cold, 'overdue: either way');
    assert.equal(index.designate('gpu', { ...options, runnable: () => false }), undefined, 'nothing it can run now');
  });

  it('uses a runnable second type key of the oldest waiter', () => {
    const index = new WaiterIndex(new FairShare());
    const either = waiter(1, A, ['gpu/m1', 'gpu/m2']);
    index.add(either);
    const pick = index.designate('gpu', { ...options, runnable: (k) => k === 'm2' });
    assert.equal(pick?.waiter, either);
    assert.equal(pick?.typeKey, 'm2');
  });

  it('a user with nothing runnable is passed over for the next user: the slot does not idle', () => {
    const fair = new FairShare();
    fair.waiterAdded(B);
    fair.granted(B, 100); // B has had far more service
    const index = new WaiterIndex(fair);
    const cold = waiter(1, A, ['gpu/m1']);
    const warm = waiter(2, B, ['gpu/m2']);
    index.add(cold);
    index.add(warm);
    assert.equal(index.designate('gpu', options)?.waiter, cold, 'A first by the fair order');
    const onlyM2 = (typeKey: string) => typeKey === 'm2';
    assert.equal(index.designate('gpu', { ...options, runnable: onlyM2 })?.waiter, warm, 'A cannot start: B');
  });

  it('counts live waiters per backend and forgets users with none left', () => {
    const fair = new FairShare();
    const index = new WaiterIndex(fair);
    const first = waiter(1, A, ['gpu/m', 'cpu/m']);
    const second = waiter(2, B, ['gpu/m']);
    index.add(first);
    index.add(second);
    assert.equal(index.queuedOn('gpu'), 2);
    assert.deepEqual(index.backendsOf('u:a').sort(), ['cpu', 'gpu']);
    index.remove(first);
    assert.equal(index.queuedOn('gpu'), 1);
    assert.equal(index.queuedOn('cpu'), 0);
    assert.deepEqual(index.backendsOf('u:a'), []);
    assert.equal(index.usersOn('gpu')?.has('u:a'), false);
  });
});

describe('queue position in the fair order', () => {
  it('counts a user’s own older calls, and of another user’s only what a round serves before it', async () => {
    const { scheduler, hold, clock } = schedulerHarness([{ name: 'gpu' }]);
    const held = hold(['gpu/m'], A);
    const ticket = (owner: TicketUser) => ({
      alias: 'x',
      candidates: candidates('gpu/m'),
      parkMs: 60_000,
      user: owner,
    });
    const aTickets = Array.from({ length: 5 }, () => ticket(A));
    for (const t of aTickets) void scheduler.acquire(t).catch(() => {});
    const bTicket = ticket(B);
    const bLease = scheduler.acquire(bTicket);
    await settle();
    assert.equal(scheduler.queuePosition(bTicket)?.position, 1, 'A is being served: B goes first');
    assert.equal(scheduler.queuePosition(aTickets[0])?.position, 2, 'A’s first: B’s one goes before it');
    assert.equal(scheduler.queuePosition(aTickets[4])?.position, 6, 'A’s fifth: four of its own and B’s one');
    clock.advance(5000); // A's call held the slot 5 s: A has been served, B not yet
    held.release();
    assert.equal((await bLease).backend, 'gpu', 'the freed slot went to B, as its position said');
  });
});

describe('designateInGroup with a runnable test', () => {
  const member = (name: string, lastTypeKey?: string): BackendSlots => ({
    spec: { name, cap: 1, paid: false, available: true, group: 'g' },
    inflight: 0,
    removed: false,
    lastTypeKey,
  });

  it('passes over heads that cannot start, unless overdue, and keeps the fair order between users', () => {
    const fair = new FairShare();
    const index = new WaiterIndex(fair);
    const llm = member('llm', 'm1');
    const other = member('other');
    const group: GroupSlots = { name: 'g', cap: 1, inflight: 0, members: new Set([llm, other]), lastKind: 'llm' };
    const aCold = waiter(1, A, ['llm/m2'], 0);
    const bWarm = waiter(2, B, ['other/m3'], 500);
    index.add(aCold);
    index.add(bWarm);
    const runnable = (slots: BackendSlots, typeKey: string) => slots.spec.name !== 'llm' || typeKey === 'm1';
    const pick = (now: number, test?: typeof runnable) =>
      designateInGroup(group, index, now, 10_000, compareMembers, test);
    assert.equal(pick(1_000)?.waiter, aCold, 'the older at equal standing');
    assert.equal(pick(1_000, runnable)?.waiter, bWarm, 'A cannot start');
    assert.equal(pick(20_000, runnable)?.waiter, aCold, 'A overdue');
  });
});
