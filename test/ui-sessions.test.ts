/**
 * Console sessions against the live state, over real sockets: a session ends with the key it
 * logged in with (a rotated user key, like a disabled or demoted user, loses the console on the
 * next request), and an open event stream — the dashboard's, the backends list's, a media
 * job's — re-checks its session every second and ends (`event: session-ended`) on a logout, a
 * rotation, a demotion. A stream whose first rendering fails is an ordinary error answer and
 * never keeps one of the 32 slots.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { JobView } from '../src/media/service-types.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import {
  call,
  MASTER as MEDIA_MASTER,
  pollJob,
  readSse,
  startMediaRig,
  type MediaRig,
} from './helpers/media-gateway.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'ui-sessions-master-key-0123456789';

/** Opens an event stream of the console as `ui`, its first frames read. */
async function openStream(gwUrl: string, ui: UiClient, path: string): Promise<Response> {
  const res = await fetch(`${gwUrl}${path}`, { headers: { cookie: ui.cookieHeader() }, redirect: 'manual' });
  assert.equal(res.status, 200, path);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  return res;
}

async function assertEndsWithSession(res: Response, what: string): Promise<void> {
  const started = Date.now();
  const { frames, ended } = await readSse(res, 5_000);
  assert.ok(ended, `${what}: the stream ends`);
  assert.equal(frames.at(-1)?.event, 'session-ended', `${what}: its last event says why`);
  assert.ok(Date.now() - started < 4_000, `${what}: within a few seconds`);
}

describe('console sessions follow the live state', () => {
  let gw: TestGateway;
  let fake: FakeBackend;
  before(async () => {
    fake = await startFake('vllm', { models: ['m'] });
    gw = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const adminUser = (name: string) => gw.gateway.users.create({ name, role: 'admin' });

  test("a rotated key ends its user's session on the next request; the new key logs in", async () => {
    const { user, key } = adminUser('rotating');
    const ui = await UiClient.login(gw, key);
    assert.equal((await ui.get('/ui')).status, 200);
    const fresh = gw.gateway.users.rotate(user.id);
    const res = await ui.get('/ui/users');
    assert.equal(res.status, 303, 'the old session is gone');
    assert.match(res.headers.get('location') ?? '', /^\/ui\/login/);
    assert.equal((await ui.get('/ui')).status, 303, 'and stays gone');
    const again = await UiClient.login(gw, fresh);
    assert.equal((await again.get('/ui')).status, 200);
    // rotating through the console's own form ends the rotator's session too (their key changed)
    await again.get(`/ui/users/${user.id}`);
    const rotated = await again.post(`/ui/users/${user.id}/rotate`, {});
    assert.equal(rotated.status, 200);
    assert.equal((await again.get('/ui')).status, 303);
  });

  test('the users repository answers whether a digest is current, never with a key', () => {
    const { user, key } = adminUser('digests');
    const digest = gw.gateway.users.digestOf(key);
    assert.ok(!digest.includes(key));
    assert.equal(gw.gateway.users.isCurrentDigest(user.id, digest), true);
    assert.equal(gw.gateway.users.isCurrentDigest(user.id + 1, digest), false, "another user's id");
    gw.gateway.users.rotate(user.id);
    assert.equal(gw.gateway.users.isCurrentDigest(user.id, digest), false);
  });

  test('the dashboard stream ends on logout', async () => {
    const ui = await UiClient.login(gw, MASTER);
    const res = await openStream(gw.url, ui, '/ui/events');
    await ui.get('/ui');
    assert.equal((await ui.post('/ui/logout', {})).status, 303);
    await assertEndsWithSession(res, 'logout');
  });

  test('the backends stream ends when the key is rotated; the dashboard stream when the user is demoted or disabled', async () => {
    const rotated = adminUser('streams-rotated');
    const rotating = await UiClient.login(gw, rotated.key);
    const backends = await openStream(gw.url, rotating, '/ui/backends/events');
    gw.gateway.users.rotate(rotated.user.id);
    await assertEndsWithSession(backends, 'rotation');

    for (const patch of [{ role: 'user' as const }, { enabled: false }]) {
      const { user, key } = adminUser(`streams-${Object.keys(patch)[0]}`);
      const ui = await UiClient.login(gw, key);
      const dashboard = await openStream(gw.url, ui, '/ui/events');
      gw.gateway.users.update(user.id, patch);
      await assertEndsWithSession(dashboard, JSON.stringify(patch));
    }
  });

  test('a stream whose first rendering fails answers 500 and keeps no slot: the 33rd still opens', async (t) => {
    const ui = await UiClient.login(gw, MASTER);
    const callLog = gw.gateway.callLog;
    const recent = callLog.recent;
    callLog.recent = () => {
      throw new Error('the call log is broken just now');
    };
    t.after(() => {
      callLog.recent = recent;
    });
    for (let i = 0; i < 33; i++) {
      try {
        // a stream left hanging (no answer within 2 s) would hold its slot: it is given up on here, and counted by the gateway
        const res = await fetch(`${gw.url}/ui/events`, {
          headers: { cookie: ui.cookieHeader() },
          signal: AbortSignal.timeout(2_000),
        });
        assert.notEqual(res.status, 200, `attempt ${i + 1} is no stream`);
        await res.body?.cancel();
      } catch (err) {
        if ((err as Error).name === 'AssertionError') throw err;
      }
    }
    callLog.recent = recent;
    const res = await openStream(gw.url, ui, '/ui/events');
    await res.body?.cancel();
  });
});

describe('a media job stream follows the session', () => {
  let rig: MediaRig;
  before(async () => {
    rig = await startMediaRig({ knobs: { stepMs: 200, steps: 40 } });
  });
  after(async () => rig?.close());

  test('logging out ends the stream of a running job', async () => {
    const submitted = await call<JobView>(rig.url, 'POST', '/v1/generations', MEDIA_MASTER, {
      mode: 'async',
      model: 'sd15',
      prompt: 'slow',
    });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const job = await pollJob(rig.url, submitted.body.id, MEDIA_MASTER, (v) => v.status === 'running');
    const ui = await UiClient.login(rig.gw, MEDIA_MASTER);
    const res = await openStream(rig.url, ui, `/ui/jobs/${job.id}/events`);
    await ui.get('/ui');
    assert.equal((await ui.post('/ui/logout', {})).status, 303);
    await assertEndsWithSession(res, 'job stream');
    await call(rig.url, 'POST', `/v1/jobs/${job.id}/cancel`, MEDIA_MASTER);
  });
});
