/**
 * The pure parts of an explained refusal: which reason a backend's state gives, the sentence
 * for one candidate and the list for several (with and without names), who sees names, and the
 * scheduler's count of calls ahead when a wait ends (per backend, GPU groups included).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { candidateReasons, type BackendOutState, type RefusalFacts } from '../src/routing/refusal.ts';
import { duration, refusalText, visibleReasons } from '../src/routing/refusal-text.ts';
import { seesBackendNames } from '../src/routing/refusal-explainer.ts';
import type { Caller } from '../src/auth/authenticator.ts';
import { AHEAD_SCAN_LIMIT, aheadByBackend, type Waiter } from '../src/scheduler/waiters.ts';
import { schedulerHarness, settle } from './helpers/scheduler-harness.ts';

const NOW = Date.UTC(2026, 11, 2, 3, 0, 0);
const up: BackendOutState = { name: 'b', spec: { enabled: true }, healthy: true, known: true };
const down = (error: BackendOutState['error'], more: Partial<BackendOutState> = {}): BackendOutState => ({
  ...up,
  healthy: false,
  error,
  ...more,
});
const facts = (b: BackendOutState, more: Partial<RefusalFacts> = {}): RefusalFacts => ({
  backends: [b],
  now: NOW,
  rejection: { reason: 'no_backend' },
  ...more,
});

const timedOut = (ahead: number, atLeast: boolean) => ({
  reason: 'park_timeout' as const,
  ahead: { byBackend: new Map([['b', ahead]]), atLeast },
});

describe('a backend state gives one reason', () => {
  const cases: Array<[string, BackendOutState, Partial<RefusalFacts>, object]> = [
    ['disabled wins over everything', { ...up, spec: { enabled: false }, draining: true }, {}, { reason: 'disabled' }],
    [
      'draining, since when',
      { ...up, draining: true, drainingSince: NOW - 40_000 },
      {},
      { reason: 'draining', since_s: 40 },
    ],
    [
      '401 refused',
      down({ kind: 'auth', status: 401, detail: 'Invalid API Key', since: NOW - 12_000 }),
      {},
      { reason: 'credential_refused', status: 401, since_s: 12 },
    ],
    [
      '403 refused',
      down({ kind: 'auth', status: 403, detail: 'forbidden', since: NOW - 1_000 }),
      {},
      { reason: 'credential_refused', status: 403, since_s: 1 },
    ],
    [
      'connection refused',
      down({ kind: 'unreachable', detail: 'ECONNREFUSED', since: NOW - 3_000 }),
      {},
      { reason: 'unreachable', since_s: 3 },
    ],
    [
      'probe timed out',
      down({ kind: 'timeout', detail: 'UND_ERR_CONNECT_TIMEOUT', since: NOW }),
      {},
      { reason: 'unreachable', since_s: 0 },
    ],
    [
      'llama.cpp loading',
      down({ kind: 'upstream', status: 503, detail: 'answered 503: Loading model', since: NOW - 4_000 }),
      {},
      { reason: 'loading', status: 503, since_s: 4 },
    ],
    [
      'a 500 health check: circuit open until the next check',
      down({ kind: 'upstream', status: 500, detail: 'boom', since: NOW - 12_000 }, { nextCheckAt: NOW + 18_000 }),
      {},
      { reason: 'circuit_open', status: 500, since_s: 12, until: new Date(NOW + 18_000).toISOString() },
    ],
    [
      'a 503 that is not a load is a circuit too (no check due: no until)',
      down({ kind: 'upstream', status: 503, detail: 'overloaded', since: NOW }),
      {},
      { reason: 'circuit_open', status: 503, since_s: 0 },
    ],
    ['never checked yet', { ...up, healthy: false, known: false }, {}, { reason: 'unchecked' }],
    ['up but the wait ran out', up, { rejection: timedOut(3, false) }, { reason: 'park_timeout', ahead: 3 }],
    [
      'more ahead than were counted',
      up,
      { rejection: timedOut(1000, true) },
      { reason: 'park_timeout', ahead: 1000, ahead_at_least: true },
    ],
    ['up but parking is off', up, { rejection: { reason: 'parking_off' } }, { reason: 'busy' }],
  ];
  for (const [name, state, more, expected] of cases) {
    it(name, () => assert.deepEqual(candidateReasons(facts(state, more)), [{ backend: 'b', ...expected }]));
  }

  it('each backend once, in candidate order; unknown ones are skipped', () => {
    const a = { ...up, name: 'a', spec: { enabled: false } };
    const reasons = candidateReasons({ ...facts(up), backends: [a, undefined, up, a] });
    assert.deepEqual(
      reasons.map((r) => r.backend),
      ['a', 'b'],
    );
  });
});

describe('the sentence', () => {
  const wording = { requested: 'badkey/m', names: true, now: NOW };
  const refused = { backend: 'badkey', reason: 'credential_refused' as const, status: 401, since_s: 12 };

  it("one candidate: one sentence, the issue's own example", () => {
    const sentence = "`badkey` is out: the upstream refused the gateway's credential (401) 12 s ago.";
    assert.equal(refusalText([refused], wording), sentence);
  });

  it('without names: the same reason, the backend unnamed', () => {
    const text = refusalText([refused], { ...wording, names: false });
    assert.equal(
      text,
      'The backend serving `badkey/m` is out: ' + "the upstream refused the gateway's credential (401) 12 s ago.",
    );
    assert.deepEqual(visibleReasons([refused], false), [{ reason: 'credential_refused', status: 401, since_s: 12 }]);
    assert.deepEqual(visibleReasons([refused], true), [refused]);
  });

  it('several: a short list, numbered when names are hidden', () => {
    const list = [
      refused,
      { backend: 'box', reason: 'unreachable' as const, since_s: 300 },
      { backend: 'old', reason: 'disabled' as const },
    ];
    assert.equal(
      refusalText(list, { ...wording, requested: 'big' }),
      "No backend can serve `big` right now: `badkey` is out: the upstream refused the gateway's credential (401) " +
        '12 s ago; ' +
        '`box` is out: the gateway could not reach it 5 min ago; `old` is disabled.',
    );
    assert.equal(
      refusalText(list, { ...wording, requested: 'big', names: false }),
      "No backend can serve `big` right now: backend 1 is out: the upstream refused the gateway's credential (401) " +
        '12 s ago; ' +
        'backend 2 is out: the gateway could not reach it 5 min ago; backend 3 is disabled.',
    );
  });

  it('circuit open says until when; a park timeout how long and how many ahead', () => {
    const until = new Date(NOW + 18_000).toISOString();
    const circuit = { backend: 'flaky', reason: 'circuit_open' as const, status: 500, since_s: 12, until };
    assert.equal(
      refusalText([circuit], wording),
      '`flaky` is out after a failed health check (HTTP 500) 12 s ago; it is checked again by 03:00:18 UTC (in 18 s).',
    );
    assert.equal(
      refusalText([{ backend: 'box', reason: 'park_timeout', ahead: 1 }], { ...wording, parkS: 60 }),
      '`box` stayed busy for the whole 60 s wait, with 1 call ahead.',
    );
    assert.equal(
      refusalText([{ backend: 'box', reason: 'park_timeout', ahead: 0 }], { ...wording, parkS: 0.5 }),
      '`box` stayed busy for the whole 0.5 s wait, with no call ahead.',
    );
    assert.equal(
      refusalText([{ backend: 'box', reason: 'park_timeout', ahead: 1000, ahead_at_least: true }], wording),
      '`box` stayed busy for the whole wait, with at least 1000 calls ahead.',
    );
  });

  it('durations read as people say them', () => {
    const read = [0, 12, 119, 120, 3600, 7200, 0.5].map(duration);
    assert.deepEqual(read, ['0 s', '12 s', '119 s', '2 min', '60 min', '2 h', '0.5 s']);
  });

  it('no candidate, no sentence (the caller keeps its generic message)', () => {
    assert.equal(refusalText([], wording), '');
  });
});

describe('who sees backend names', () => {
  const master: Caller = { kind: 'master', isAdmin: true, allow: [] };
  const user = (role: 'user' | 'admin'): Caller => ({ kind: 'user', isAdmin: role === 'admin', allow: [] });
  const anonymous: Caller = { kind: 'anonymous', isAdmin: true, allow: [] };
  const cases: Array<[string, Caller | undefined, boolean | 'auto', boolean]> = [
    ['the master key, always', master, false, true],
    ['an admin user, always', user('admin'), false, true],
    ['a plain user with auto (so users exist): no', user('user'), 'auto', false],
    ['a plain user with true: yes', user('user'), true, true],
    ['an open gateway with auto (no users): yes', anonymous, 'auto', true],
    ['an open gateway with false: no', anonymous, false, false],
    ['a key that no longer passes, with auto: no', undefined, 'auto', false],
    ['a key that no longer passes, with true: yes', undefined, true, true],
  ];
  for (const [name, caller, setting, expected] of cases) {
    it(name, () => assert.equal(seesBackendNames(caller, setting), expected));
  }
});

describe('the scheduler counts the calls ahead when a wait ends', () => {
  it('per backend: older waiters still parked there, or on a backend of its GPU group', async () => {
    const fleet = [{ name: 'a' }, { name: 'b', group: 'card' }, { name: 'c', group: 'card' }];
    const { clock, call, hold } = schedulerHarness(fleet);
    const held = [hold(['a/m']), hold(['b/m'])];
    call('long-a', ['a/m'], { parkMs: 60_000 });
    call('long-a2', ['a/m'], { parkMs: 60_000 });
    call('long-c', ['c/m'], { parkMs: 60_000 });
    const short = call('short', ['a/m', 'b/m'], { parkMs: 1_000 });
    const newer = call('newer', ['a/m'], { parkMs: 60_000 });
    clock.advance(1_000);
    await settle();
    assert.equal(short.rejection?.reason, 'park_timeout');
    const ahead = Object.fromEntries(short.rejection!.ahead!.byBackend);
    assert.deepEqual(ahead, { a: 2, b: 1 }, 'long-c is ahead on b through the group');
    assert.equal(short.rejection!.ahead!.atLeast, false);
    assert.equal(newer.rejection, undefined);
    for (const lease of held) lease.release();
  });

  it('counting stops at its limit: the count is then a lower bound (a refusal costs a bounded scan)', () => {
    const waiter = (seq: number, backend: string) =>
      ({ seq, typeKeysByBackend: new Map([[backend, ['m']]]) }) as unknown as Waiter;
    const parked = [waiter(1, 'a'), waiter(2, 'x'), waiter(3, 'a'), waiter(4, 'a'), waiter(5, 'a')];
    const me = parked[4];
    assert.deepEqual(
      aheadByBackend(me, parked, () => undefined),
      { byBackend: new Map([['a', 3]]), atLeast: false },
    );
    assert.deepEqual(
      aheadByBackend(me, parked, () => undefined, 2),
      { byBackend: new Map([['a', 1]]), atLeast: true },
    );
    assert.ok(AHEAD_SCAN_LIMIT >= 100, 'exact under the default max_parked (100)');
  });

  it('other refusals carry no count', async () => {
    const { call, hold } = schedulerHarness([{ name: 'a' }]);
    hold(['a/m']);
    const off = call('off', ['a/m'], { parkMs: 0 });
    await settle();
    assert.equal(off.rejection?.reason, 'parking_off');
    assert.equal(off.rejection?.ahead, undefined);
  });
});
