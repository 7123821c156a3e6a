/**
 * jobs.db's repository: the lifecycle and its first-terminal-wins rule, owner-scoped listing,
 * expiry, results and inputs, and the reconcile after a restart.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { JOB_ID_RE, newJobId, RECONCILE_ERROR, type NewJob } from '../src/media/jobs/job-types.ts';
import { JobStore } from '../src/media/jobs/store.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const NOW = Date.UTC(2026, 2, 15, 12);
const HOUR = 3_600_000;
const tempDir = tempDirs('llmgw-job-store-');

function newJob(over: Partial<NewJob> = {}): NewJob {
  return {
    owner: 'user:1',
    alias: 'flux-dev',
    request: { prompt: 'a red fox', params: { steps: 20 } },
    createdAt: NOW,
    expiresAt: NOW + 24 * HOUR,
    ...over,
  };
}

function open(t: { after(fn: () => void): void }, dir = tempDir()): JobStore {
  const store = JobStore.open(dir);
  t.after(() => store.close());
  return store;
}

describe('JobStore', () => {
  test('ids are unguessable: job_ and 32 hex', () => {
    const ids = new Set(Array.from({ length: 100 }, newJobId));
    assert.equal(ids.size, 100);
    for (const id of ids) assert.match(id, JOB_ID_RE);
  });

  test('create → running → done, with progress, node, backend, prompt id and summary', (t) => {
    const store = open(t);
    const job = store.create(
      newJob({
        request: {
          prompt: 'p',
          params: { seed: 1 },
          inputs: [{ param: 'image', name: 'a.png', sha256: 'ab'.repeat(32) }],
        },
      }),
    );
    assert.match(job.id, JOB_ID_RE);
    assert.deepEqual(store.get(job.id, NOW), job);
    assert.equal(job.status, 'queued');
    assert.equal(job.backend, null);

    assert.equal(store.update(job.id, { status: 'running', backend: 'gpu1', promptId: 'p-123' }, NOW + 1), true);
    assert.equal(store.update(job.id, { progress: 42.5, node: '7' }, NOW + 2), true);
    assert.equal(store.update(job.id, { progress: 250 }, NOW + 3), true);
    let got = store.get(job.id, NOW)!;
    assert.equal(got.progress, 100, 'clamped');
    assert.equal(store.update(job.id, { progress: -3 }, NOW + 3), true);
    got = store.get(job.id, NOW)!;
    assert.deepEqual(
      {
        status: got.status,
        backend: got.backend,
        promptId: got.promptId,
        progress: got.progress,
        node: got.node,
        startedAt: got.startedAt,
        updatedAt: got.updatedAt,
      },
      {
        status: 'running',
        backend: 'gpu1',
        promptId: 'p-123',
        progress: 0,
        node: '7',
        startedAt: NOW + 1,
        updatedAt: NOW + 3,
      },
    );

    const summary = { removed: ['12'], bypassed: ['9'], seed: '1234' };
    assert.equal(store.update(job.id, { status: 'done', node: null, summary }, NOW + 10), true);
    got = store.get(job.id, NOW)!;
    assert.deepEqual(
      {
        status: got.status,
        progress: got.progress,
        node: got.node,
        summary: got.summary,
        finishedAt: got.finishedAt,
        backend: got.backend,
      },
      { status: 'done', progress: 100, node: null, summary, finishedAt: NOW + 10, backend: 'gpu1' },
    );
    assert.deepEqual(got.request.inputs, [{ param: 'image', name: 'a.png', sha256: 'ab'.repeat(32) }]);
  });

  test('the first terminal status wins: cancel then done, done then cancel', (t) => {
    const store = open(t);
    const a = store.create(newJob());
    store.update(a.id, { status: 'running' });
    assert.equal(store.update(a.id, { status: 'cancelled' }, NOW + 5), true);
    assert.equal(store.update(a.id, { status: 'done', summary: { seed: '1' } }, NOW + 6), false);
    assert.equal(store.update(a.id, { progress: 80 }, NOW + 7), false, 'a late progress tick changes nothing');
    let got = store.get(a.id, NOW)!;
    assert.deepEqual(
      { status: got.status, summary: got.summary, finishedAt: got.finishedAt, updatedAt: got.updatedAt },
      { status: 'cancelled', summary: null, finishedAt: NOW + 5, updatedAt: NOW + 5 },
    );

    const b = store.create(newJob());
    store.update(b.id, { status: 'running' });
    assert.equal(store.update(b.id, { status: 'done' }, NOW + 5), true);
    assert.equal(store.update(b.id, { status: 'cancelled' }, NOW + 6), false);
    assert.equal(store.update(b.id, { status: 'failed', error: { code: 'x', message: 'y' } }, NOW + 6), false);
    got = store.get(b.id, NOW)!;
    assert.deepEqual(
      { status: got.status, error: got.error, finishedAt: got.finishedAt },
      { status: 'done', error: null, finishedAt: NOW + 5 },
    );

    const c = store.create(newJob());
    assert.equal(
      store.update(c.id, { status: 'failed', error: { code: 'backend_error', message: 'boom' } }, NOW + 1),
      true,
    );
    assert.deepEqual(store.get(c.id, NOW)!.error, { code: 'backend_error', message: 'boom' });
    assert.equal(store.update(c.id, { status: 'running' }), false);
    assert.equal(store.update('job_' + '0'.repeat(32), { status: 'running' }), false, 'an unknown job');
  });

  test('a running job may go back to queued (a retry elsewhere)', (t) => {
    const store = open(t);
    const j = store.create(newJob());
    store.update(j.id, { status: 'running', backend: 'gpu1', promptId: 'p1' }, NOW + 1);
    assert.equal(store.update(j.id, { status: 'queued', backend: null, promptId: null }, NOW + 2), true);
    const got = store.get(j.id, NOW)!;
    assert.deepEqual(
      { status: got.status, backend: got.backend, promptId: got.promptId },
      { status: 'queued', backend: null, promptId: null },
    );
  });

  test('list: owner-scoped (all for admins), status filter, limit, newest first, expired left out', (t) => {
    const store = open(t);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const owner = i % 2 === 0 ? 'user:1' : 'user:2';
      ids.push(
        store.create(newJob({ owner, createdAt: NOW + i * 1000, expiresAt: i === 0 ? NOW + 10 : NOW + 24 * HOUR })).id,
      );
    }
    store.update(ids[2], { status: 'running' });
    store.update(ids[4], { status: 'done' });
    const now = NOW + 100; // ids[0] has expired
    assert.deepEqual(
      store.list('user:1', {}, now).map((j) => j.id),
      [ids[4], ids[2]],
    );
    assert.deepEqual(
      store.list('user:2', {}, now).map((j) => j.id),
      [ids[5], ids[3], ids[1]],
    );
    assert.deepEqual(
      store.list(null, {}, now).map((j) => j.id),
      [ids[5], ids[4], ids[3], ids[2], ids[1]],
    );
    assert.deepEqual(
      store.list(null, { limit: 2 }, now).map((j) => j.id),
      [ids[5], ids[4]],
    );
    assert.deepEqual(
      store.list('user:1', { status: 'done' }, now).map((j) => j.id),
      [ids[4]],
    );
    assert.deepEqual(store.list('user:2', { status: 'done' }, now), []);
    assert.deepEqual(
      store.list(null, { status: 'queued', limit: 2 }, now).map((j) => j.id),
      [ids[5], ids[3]],
    );
    assert.deepEqual(store.list(null, { limit: 0 }, now).length, 1, 'limit clamped to at least 1');
    assert.equal(store.list('user:1', {}, NOW).length, 3, 'before the expiry it is listed');
  });

  test('TTL: get hides an expired job, expired() names it, delete removes it with its rows', (t) => {
    const store = open(t);
    const j = store.create(newJob({ expiresAt: NOW + HOUR }));
    const keep = store.create(newJob({ expiresAt: NOW + 2 * HOUR }));
    store.addResult(j.id, { n: 0, kind: 'image', mime: 'image/png', file: '0.png', bytes: 10, sha256: 'a'.repeat(64) });
    assert.ok(store.get(j.id, NOW + HOUR - 1));
    assert.equal(store.get(j.id, NOW + HOUR), undefined);
    assert.deepEqual(store.expired(NOW + HOUR), [j.id]);
    assert.equal(store.delete(j.id), true);
    assert.deepEqual(store.results(j.id), [], 'results go with the job');
    assert.deepEqual(store.expired(NOW + HOUR), []);
    assert.ok(store.get(keep.id, NOW + HOUR));
  });

  test('results and inputs round trip, in order; width/height only when known', (t) => {
    const store = open(t);
    const j = store.create(newJob());
    store.addResult(j.id, {
      n: 1,
      kind: 'audio',
      mime: 'audio/flac',
      file: '1.flac',
      bytes: 99,
      sha256: 'b'.repeat(64),
    });
    store.addResult(j.id, {
      n: 0,
      kind: 'image',
      mime: 'image/png',
      file: '0.png',
      bytes: 10,
      sha256: 'a'.repeat(64),
      width: 64,
      height: 32,
    });
    assert.deepEqual(store.results(j.id), [
      {
        n: 0,
        kind: 'image',
        mime: 'image/png',
        file: '0.png',
        bytes: 10,
        sha256: 'a'.repeat(64),
        width: 64,
        height: 32,
      },
      { n: 1, kind: 'audio', mime: 'audio/flac', file: '1.flac', bytes: 99, sha256: 'b'.repeat(64) },
    ]);
    assert.throws(
      () => store.addResult(j.id, { n: 0, kind: 'image', mime: 'image/png', file: '0.png', bytes: 1, sha256: 'c' }),
      /UNIQUE|PRIMARY/,
    );
    assert.throws(
      () =>
        store.addResult('job_' + 'f'.repeat(32), {
          n: 0,
          kind: 'image',
          mime: 'image/png',
          file: '0.png',
          bytes: 1,
          sha256: 'c',
        }),
      /FOREIGN KEY/,
    );
    const input = { n: 0, param: 'image', mime: 'image/jpeg', file: 'in-0.jpg', bytes: 5, sha256: 'd'.repeat(64) };
    store.addInput(j.id, input);
    assert.deepEqual(store.inputs(j.id), [input]);
    assert.deepEqual(store.inputs(store.create(newJob()).id), []);
  });

  test('a request holding bytes is refused', (t) => {
    const store = open(t);
    assert.throws(() => store.create(newJob({ request: { params: { image: Buffer.from('png') } } })), /bytes/);
    assert.throws(() => store.create(newJob({ request: { params: { image: new Uint8Array(4) } } })), /bytes/);
    assert.throws(
      () => store.create(newJob({ request: { params: { image: `data:image/png;base64,${'A'.repeat(2000)}` } } })),
      /bytes/,
    );
    assert.throws(() => store.create(newJob({ id: 'job_../../x' })), /invalid job id/);
    assert.equal(store.list(null, {}, NOW).length, 0);
  });

  test('reconcile after reopening: queued/running → failed, returned with backend and prompt id', (t) => {
    const dir = tempDir();
    const first = JobStore.open(dir);
    const queued = first.create(newJob({ createdAt: NOW }));
    const running = first.create(newJob({ createdAt: NOW + 1 }));
    const done = first.create(newJob({ createdAt: NOW + 2 }));
    first.update(running.id, { status: 'running', backend: 'gpu2', promptId: 'prompt-9', node: '3' });
    first.update(done.id, { status: 'done' }, NOW + 5);
    first.close(); // the process "stops"

    const store = open(t, dir);
    const orphans = store.reconcile(NOW + 100);
    assert.deepEqual(orphans, [
      { id: queued.id, owner: 'user:1', status: 'queued', backend: null, promptId: null },
      { id: running.id, owner: 'user:1', status: 'running', backend: 'gpu2', promptId: 'prompt-9' },
    ]);
    for (const id of [queued.id, running.id]) {
      const j = store.get(id, NOW)!;
      assert.deepEqual(
        { status: j.status, error: j.error, finishedAt: j.finishedAt, node: j.node },
        { status: 'failed', error: RECONCILE_ERROR, finishedAt: NOW + 100, node: null },
      );
    }
    const d = store.get(done.id, NOW)!;
    assert.deepEqual({ status: d.status, finishedAt: d.finishedAt }, { status: 'done', finishedAt: NOW + 5 });
    assert.equal(store.get(running.id, NOW)!.backend, 'gpu2', 'kept for the record');
    assert.deepEqual(store.reconcile(NOW + 200), [], 'nothing left to reconcile');
    assert.ok(existsSync(join(dir, 'jobs.db')));
  });
});
