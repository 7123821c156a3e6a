/**
 * GPU groups: a lease needs a free slot on its backend and on its group; a slot freed on the
 * group goes to one designated waiter of any of its backends (oldest overdue, else the same
 * model on a backend of the kind the group last ran, else the oldest); fresh arrivals never
 * take it; group changes re-run hand-offs. The switch hook: scheduler-gpu-groups-hook.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AFFINITY_MAX_WAIT_MS,
  candidates,
  grantedOn,
  leaseOf,
  schedulerHarness,
  settle,
} from './helpers/scheduler-harness.ts';
import { card } from './helpers/scheduler-card.ts';

describe('gpu groups: a lease needs a free slot on the backend and on its group', () => {
  it('a group missing from the configuration has cap 1: an LLM call and an image job never share the card', async () => {
    const { call, hold, group } = card();
    hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl'], { parkMs: 0 });
    const chat = call('chat', ['llm/qwen'], { parkMs: 0 });
    await settle();
    assert.equal(job.rejection?.reason, 'parking_off');
    assert.equal(chat.rejection?.reason, 'parking_off', 'the backend has room (cap 4), its group has not');
    assert.deepEqual(group(), { name: 'box', inflight: 1, cap: 1, members: ['llm', 'comfy'], lastKind: 'llm' });
  });

  it('a configured cap: two leases across the group, the third parks', async () => {
    const { call, hold, group } = card(2);
    hold(['llm/qwen']);
    hold(['comfy/sdxl']);
    const third = call('third', ['llm/qwen']);
    await settle();
    assert.equal(third.lease, undefined);
    assert.equal(group()?.inflight, 2);
  });

  it('cap 0 is unlimited (only the backends’ caps count)', async () => {
    const { call, hold } = card(0);
    for (let i = 0; i < 4; i++) hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl'], { parkMs: 0 });
    await settle();
    assert.equal(job.lease?.backend, 'comfy');
  });

  it('a call falls through to the next candidate when the group is full', async () => {
    const { call, hold } = card();
    hold(['comfy/sdxl']);
    const chat = call('chat', ['llm/qwen', 'spare/qwen'], { parkMs: 0 });
    await settle();
    assert.equal(grantedOn(chat), 'spare/qwen');
  });

  it('ungrouped backends are untouched by groups', async () => {
    const { scheduler, call, hold } = card(1);
    hold(['comfy/sdxl']);
    const first = call('first', ['spare/m'], { parkMs: 0 });
    await settle();
    assert.equal(first.lease?.backend, 'spare');
    assert.equal(scheduler.snapshot().backends.find((b) => b.name === 'spare')?.group, undefined);
  });
});

describe('gpu groups: a freed group slot goes to a waiter of any backend of the group', () => {
  it('an LLM lease released: the image job parked on the other backend of the card runs', async () => {
    const { call, hold, group } = card();
    const chat = hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl']);
    await settle();
    assert.equal(job.lease, undefined);
    chat.release();
    await settle();
    assert.equal(grantedOn(job), 'comfy/sdxl');
    assert.equal(leaseOf(job)?.waitedMs, 0);
    assert.equal(group()?.lastKind, 'media');
  });

  it('a fresh arrival never takes a group slot a waiter is entitled to', async () => {
    const { scheduler, call, hold } = card();
    const chat = hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl']);
    chat.release();
    // Same tick, before the waiter's callbacks ran: the llm backend has room, the group has not.
    assert.equal(scheduler.tryAcquireNow(candidates('llm/qwen'), new Set()), null);
    const fresh = call('fresh', ['llm/qwen'], { parkMs: 0 });
    await settle();
    assert.equal(job.lease?.backend, 'comfy');
    assert.equal(fresh.rejection?.reason, 'parking_off');
  });

  it('…but may take a group slot no waiter can use (the waiter’s own backend is full)', async () => {
    const { call, hold } = card(2);
    hold(['comfy/sdxl']);
    const job = call('job', ['comfy/flux']);
    const chat = call('chat', ['llm/qwen'], { parkMs: 0 });
    await settle();
    assert.equal(chat.lease?.backend, 'llm');
    assert.equal(job.lease, undefined);
  });

  it('one decision per freed slot: each release of a cap-1 group serves one waiter', async () => {
    const { call, hold } = card();
    let current = hold(['llm/qwen']);
    const calls = [call('a', ['comfy/sdxl']), call('b', ['llm/qwen']), call('c', ['comfy/sdxl'])];
    const served: string[] = [];
    for (let i = 0; i < calls.length; i++) {
      current.release();
      await settle();
      const now = calls.filter((c) => c.lease && !served.includes(c.name));
      assert.equal(now.length, 1);
      served.push(now[0].name);
      current = now[0].lease!;
    }
    // b: llm last ran qwen and the group last ran LLM work (affinity over the older a); then
    // nobody else wants qwen → the oldest, a; then c.
    assert.deepEqual(served, ['b', 'a', 'c']);
  });

  it('a waiter that can run on two backends of the group is served once', async () => {
    const { scheduler, call, hold } = schedulerHarness([
      { name: 'l1', group: 'box' },
      { name: 'l2', group: 'box' },
    ]);
    const lease = hold(['l1/m']);
    const both = call('both', ['l1/m', 'l2/m']);
    lease.release();
    await settle();
    assert.equal(both.lease?.backend, 'l1');
    assert.equal(scheduler.snapshot().groups[0].inflight, 1);
    assert.equal(scheduler.hasParked(), false);
  });

  it('a member that is unavailable is passed over; its waiter keeps waiting', async () => {
    const { scheduler, call, hold, addBackend } = card();
    const chat = hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl']);
    const next = call('next', ['llm/qwen']);
    addBackend({ name: 'comfy', cap: 1, group: 'box', kind: 'media', available: false });
    chat.release();
    await settle();
    assert.equal(job.lease, undefined);
    assert.equal(next.lease?.backend, 'llm');
    next.lease.release();
    addBackend({ name: 'comfy', cap: 1, group: 'box', kind: 'media' });
    await settle();
    assert.equal(leaseOf(job)?.backend, 'comfy', 'back up: the freed group slot is handed to it');
    assert.equal(scheduler.snapshot().groups[0].inflight, 1);
  });
});

describe('gpu groups: hand-off rules across the group', () => {
  /** comfy last ran sdxl, then llm ran llama (still held): the group last ran LLM work. */
  function afterMediaThenLlm() {
    const harness = card();
    harness.hold(['comfy/sdxl']).release();
    const running = harness.hold(['llm/llama']);
    return { ...harness, running };
  }

  it('the same model on a backend of the kind the group last ran beats older waiters', async () => {
    const { clock, call, running } = afterMediaThenLlm();
    const older = call('older', ['llm/qwen']);
    clock.advance(1);
    const sdxl = call('sdxl', ['comfy/sdxl']);
    clock.advance(1);
    const llama = call('llama', ['llm/llama']);
    running.release();
    await settle();
    assert.deepEqual(
      [older, sdxl, llama].filter((c) => c.lease).map((c) => c.name),
      ['llama'],
    );
  });

  it('what the other kind’s backend last ran is not affinity: a switch is due anyway, so the oldest goes', async () => {
    const { clock, call, running } = afterMediaThenLlm();
    const older = call('older', ['llm/qwen']);
    clock.advance(1);
    const sdxl = call('sdxl', ['comfy/sdxl']);
    running.release();
    await settle();
    assert.ok(older.lease && !sdxl.lease);
  });

  it('an overdue waiter beats affinity, whichever backend of the group it waits on', async () => {
    const { clock, call, running } = afterMediaThenLlm();
    const overdue = call('overdue', ['comfy/flux']);
    clock.advance(AFFINITY_MAX_WAIT_MS + 1);
    const llama = call('llama', ['llm/llama']);
    running.release();
    await settle();
    assert.equal(grantedOn(overdue), 'comfy/flux');
    assert.equal(llama.lease, undefined);
  });

  it('the affinity case uses the matching type key of a waiter with several', async () => {
    const { call, running } = afterMediaThenLlm();
    call('older', ['comfy/flux']);
    const either = call('either', ['llm/qwen', 'llm/llama']);
    running.release();
    await settle();
    assert.equal(grantedOn(either), 'llm/llama');
  });

  it('a park deadline still applies while the group is busy', async () => {
    const { clock, scheduler, call, hold } = card();
    const chat = hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl'], { parkMs: 5_000 });
    const later = call('later', ['comfy/sdxl']);
    clock.advance(5_000);
    await settle();
    assert.equal(job.rejection?.reason, 'park_timeout');
    chat.release();
    await settle();
    assert.equal(later.lease?.backend, 'comfy');
    assert.equal(scheduler.snapshot().parked.length, 0);
  });

  it('an aborted waiter leaves the group’s queues', async () => {
    const { call, hold } = card();
    const chat = hold(['llm/qwen']);
    const controller = new AbortController();
    const gone = call('gone', ['comfy/sdxl'], { signal: controller.signal });
    const stays = call('stays', ['llm/qwen']);
    controller.abort();
    chat.release();
    await settle();
    assert.equal(gone.rejection?.reason, 'aborted');
    assert.equal(stays.lease?.backend, 'llm');
  });
});

describe('gpu groups: changing groups re-runs hand-offs', () => {
  it('configureGroups raising the cap hands the new slot to a waiter at once', async () => {
    const { scheduler, call, hold, group } = card();
    hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl']);
    await settle();
    assert.equal(job.lease, undefined);
    scheduler.configureGroups({ box: { cap: 2 } });
    await settle();
    assert.equal(leaseOf(job)?.backend, 'comfy');
    assert.equal(group()?.inflight, 2);
  });

  it('lowering the cap below what is out lets the leases finish and grants nothing until under it', async () => {
    const { scheduler, call, hold } = card(3);
    const a = hold(['llm/qwen']);
    const b = hold(['llm/qwen']);
    scheduler.configureGroups({ box: { cap: 1 } });
    const waiter = call('waiter', ['comfy/sdxl']);
    a.release();
    await settle();
    assert.equal(waiter.lease, undefined, 'one lease still out: the group is at its cap');
    b.release();
    await settle();
    assert.equal(leaseOf(waiter)?.backend, 'comfy');
  });

  it('dropping a group from the configuration falls back to cap 1', async () => {
    const { scheduler, hold, call, group } = card(2);
    hold(['llm/qwen']);
    scheduler.configureGroups({});
    const job = call('job', ['comfy/sdxl'], { parkMs: 0 });
    await settle();
    assert.equal(job.rejection?.reason, 'parking_off');
    assert.equal(group()?.cap, 1);
  });

  it('upsertBackend moving a backend to another group hands it a waiter at once', async () => {
    const { call, hold, addBackend, group } = card();
    hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl']);
    addBackend({ name: 'comfy', cap: 1, group: 'box2', kind: 'media' });
    await settle();
    assert.equal(job.lease?.backend, 'comfy');
    assert.deepEqual(group()?.members, ['llm']);
    assert.deepEqual(group('box2'), { name: 'box2', inflight: 1, cap: 1, members: ['comfy'], lastKind: 'media' });
  });

  it('a lease out while its backend changes group releases on the group it was granted on', async () => {
    const { scheduler, call, hold, addBackend, group } = card();
    const chat = hold(['llm/qwen']);
    addBackend({ name: 'llm', cap: 4, group: 'box2' });
    const job = call('job', ['comfy/sdxl']);
    const moved = call('moved', ['llm/qwen'], { parkMs: 0 });
    await settle();
    assert.equal(job.lease, undefined, 'box still holds the lease granted on it');
    assert.equal(moved.lease?.backend, 'llm', 'box2 is free');
    chat.release();
    await settle();
    assert.equal(leaseOf(job)?.backend, 'comfy');
    assert.deepEqual(
      scheduler.snapshot().groups.map((g) => [g.name, g.inflight, g.members]),
      [
        ['box', 1, ['comfy']],
        ['box2', 1, ['llm']],
      ],
    );
    leaseOf(moved)!.release();
    assert.equal(group('box2')?.inflight, 0);
  });

  it('leaving every group while a lease is out: the release hands the backend’s own slot on too', async () => {
    const { call, hold, addBackend } = card();
    const job = hold(['comfy/sdxl']);
    addBackend({ name: 'comfy', cap: 1, kind: 'media' });
    const next = call('next', ['comfy/sdxl']);
    await settle();
    assert.equal(next.lease, undefined, 'comfy’s own slot is taken');
    job.release();
    await settle();
    assert.equal(leaseOf(next)?.backend, 'comfy');
  });

  it('a backend removed while its lease is out: the release frees the group for the other member', async () => {
    const { scheduler, call, hold, group } = card();
    const job = hold(['comfy/sdxl']);
    scheduler.removeBackend('comfy');
    assert.deepEqual(group()?.members, ['llm']);
    const chat = call('chat', ['llm/qwen']);
    await settle();
    assert.equal(chat.lease, undefined, 'the card is still busy with the job');
    job.release();
    job.release();
    await settle();
    assert.equal(leaseOf(chat)?.backend, 'llm');
    assert.equal(group()?.inflight, 1);
    assert.ok(!scheduler.snapshot().backends.some((b) => b.name === 'comfy'));
  });

  it('an unconfigured group nobody names any more leaves the snapshot; a configured one stays', async () => {
    const { scheduler, addBackend } = card();
    scheduler.configureGroups({ idle: { cap: 2 } });
    addBackend({ name: 'llm', cap: 4 });
    addBackend({ name: 'comfy', cap: 1, kind: 'media' });
    assert.deepEqual(scheduler.snapshot().groups, [
      { name: 'idle', inflight: 0, cap: 2, members: [], lastKind: undefined },
    ]);
  });
});
