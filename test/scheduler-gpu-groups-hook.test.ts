/**
 * GPU groups: the switch hook (a grant of the other kind than the group's previous grant),
 * queue positions across a group, and what the snapshot says about groups.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GroupSwitchEvent } from '../src/scheduler/index.ts';
import { candidates, schedulerHarness, settle } from './helpers/scheduler-harness.ts';
import { card } from './helpers/scheduler-card.ts';

describe('gpu groups: the switch hook', () => {
  it('fires on a grant of the other kind than the group’s previous grant, not on the first nor on the same kind', async () => {
    const { scheduler, call, hold } = card(2);
    const events: GroupSwitchEvent[] = [];
    scheduler.configure({ onGroupSwitch: (e) => events.push(e) });
    const chat = hold(['llm/qwen']); // first grant: no switch
    hold(['llm/qwen']).release(); // same kind
    assert.equal(events.length, 0);
    const job = hold(['comfy/sdxl']);
    assert.deepEqual(events, [{ group: 'box', from: 'llm', to: 'media', backend: 'comfy' }]);
    const parked = call('parked', ['llm/qwen']); // the group is full (chat + job)
    job.release(); // → the parked LLM call: back to LLM work
    await settle();
    assert.ok(parked.lease);
    chat.release();
    assert.deepEqual(
      events.map((e) => `${e.from}>${e.to}@${e.backend}`),
      ['llm>media@comfy', 'media>llm@llm'],
    );
  });

  it('fires synchronously at a hand-off, with the lease already counted', async () => {
    const { scheduler, call, hold } = card();
    const seen: number[] = [];
    scheduler.configure({ onGroupSwitch: () => seen.push(scheduler.snapshot().groups[0].inflight) });
    const chat = hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl']);
    chat.release();
    assert.deepEqual(seen, [1]);
    await settle();
    assert.equal(job.lease?.backend, 'comfy');
  });

  it('a hook that throws changes nothing', async () => {
    const { scheduler, call, hold, group } = card();
    scheduler.configure({
      onGroupSwitch: () => {
        throw new Error('boom');
      },
    });
    const chat = hold(['llm/qwen']);
    const job = call('job', ['comfy/sdxl']);
    chat.release();
    await settle();
    assert.equal(job.lease?.backend, 'comfy');
    assert.equal(group()?.lastKind, 'media');
    job.lease.release();
    assert.ok(scheduler.tryAcquireNow(candidates('llm/qwen'), new Set()));
  });

  it('no hook for ungrouped backends', () => {
    const { scheduler, hold } = schedulerHarness([{ name: 'a' }, { name: 'c', kind: 'media' }]);
    const events: GroupSwitchEvent[] = [];
    scheduler.configure({ onGroupSwitch: (e) => events.push(e) });
    hold(['a/m']).release();
    hold(['c/sdxl']).release();
    assert.deepEqual(events, []);
  });
});

describe('gpu groups: queue position and snapshot', () => {
  it('older waiters on another backend of the group count as ahead', async () => {
    const { scheduler, hold } = card();
    hold(['llm/qwen']);
    hold(['spare/x']);
    scheduler.acquire({ alias: 'job', candidates: candidates('comfy/sdxl'), parkMs: 60_000 }).catch(() => {});
    scheduler.acquire({ alias: 'elsewhere', candidates: candidates('spare/x'), parkMs: 60_000 }).catch(() => {});
    const ticket = { alias: 'chat', candidates: candidates('llm/qwen'), parkMs: 60_000 };
    scheduler.acquire(ticket).catch(() => {});
    assert.equal(scheduler.queuePosition(ticket)?.position, 2);
  });

  it('backends report their group and kind', () => {
    const { scheduler } = card();
    assert.deepEqual(
      scheduler.snapshot().backends.map((b) => [b.name, b.group, b.kind]),
      [
        ['llm', 'box', 'llm'],
        ['comfy', 'box', 'media'],
        ['spare', undefined, 'llm'],
      ],
    );
  });
});
