/** The three-way merge of one table by primary key (cluster/store-merge.ts), pure. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mergeTable, sameRows } from '../src/cluster/store-merge.ts';
import type { Row } from '../src/store/table-snapshot.ts';

const SETTINGS = ['key', 'value', 'updated_at'];
const USERS = ['id', 'name', 'key_digest'];
const s = (key: string, value: string): Row => ({ key, value, updated_at: 1 });
const u = (id: number, name: string, key_digest = `d-${name}`): Row => ({ id, name, key_digest });

describe('store merge', () => {
  test('edits of different rows on both ends are both kept; an untouched row follows the remote', () => {
    const base = { rows: [s('a', '1'), s('b', '1'), s('c', '1')] };
    const local = { rows: [s('a', '2'), s('b', '1'), s('c', '1'), s('new-here', '1')] };
    const remote = { rows: [s('a', '1'), s('b', '3'), s('new-there', '1')] }; // c removed there
    const { snapshot, dropped } = mergeTable('settings', SETTINGS, base, local, remote);
    const want = [s('a', '2'), s('b', '3'), s('new-here', '1'), s('new-there', '1')];
    assert.ok(sameRows(snapshot.rows, want, 'settings', SETTINGS), JSON.stringify(snapshot.rows));
    assert.deepEqual(dropped, []);
  });

  test('the same row on both ends: the merging (later) writer wins; a local removal stays removed', () => {
    const base = { rows: [s('a', '1'), s('b', '1')] };
    const local = { rows: [s('a', 'mine')] };
    const remote = { rows: [s('a', 'theirs'), s('b', '1')] };
    const { snapshot } = mergeTable('settings', SETTINGS, base, local, remote);
    assert.ok(sameRows(snapshot.rows, [s('a', 'mine')], 'settings', SETTINGS), JSON.stringify(snapshot.rows));
  });

  test('users: an id given out on both ends goes to the remote user, the local one gets the next id', () => {
    const base = { rows: [u(1, 'root')], seq: 1 };
    const local = { rows: [u(1, 'root'), u(2, 'alice')], seq: 2 };
    const remote = { rows: [u(1, 'root'), u(2, 'bob')], seq: 2 };
    const { snapshot, renumbered } = mergeTable('users', USERS, base, local, remote);
    assert.deepEqual(renumbered, [[2, 3]]);
    assert.ok(sameRows(snapshot.rows, [u(1, 'root'), u(2, 'bob'), u(3, 'alice')], 'users', USERS));
    assert.equal(snapshot.seq, 3);
  });

  test('users: a name or key taken on both ends keeps the remote user and reports the local change dropped', () => {
    const base = { rows: [u(1, 'root'), u(2, 'carol')], seq: 2 };
    const local = { rows: [u(1, 'root'), u(2, 'carol'), u(4, 'dave', 'k1')], seq: 4 };
    const remote = { rows: [u(1, 'root'), u(2, 'carol'), u(3, 'dave', 'k2')], seq: 3 };
    const { snapshot, dropped } = mergeTable('users', USERS, base, local, remote);
    assert.deepEqual(dropped, ['4']);
    assert.ok(sameRows(snapshot.rows, remote.rows, 'users', USERS), JSON.stringify(snapshot.rows));
    assert.equal(snapshot.seq, 4, 'id 4 is not given out again');
    const renamed = { rows: [u(1, 'root'), u(2, 'erin')], seq: 2 };
    const clash = mergeTable('users', USERS, base, renamed, { rows: [...base.rows, u(3, 'erin', 'k3')], seq: 3 });
    assert.deepEqual(clash.dropped, ['2']);
    assert.ok(
      clash.snapshot.rows.some((r) => r.id === 2 && r.name === 'carol'),
      'back to the remote row',
    );
  });
});
