/**
 * `auto_restart`: a ComfyUI box whose executor is stuck is rebooted through ComfyUI-Manager,
 * over sockets against the fake ComfyUI: the Manager's route found whichever version it is
 * (v4, current legacy POST, older GET), at most one reboot per `restart_cooldown_s`, a refusal
 * or a missing Manager logged, nothing asked without the option; and end to end through
 * discovery and /health.
 */
import assert from 'node:assert/strict';
import { after, afterEach, describe, test } from 'node:test';
import { Agent } from 'undici';
import type { BackendSpec } from '../src/config/types.ts';
import { ExecutorStuck } from '../src/backends/media-health.ts';
import { ComfyHealth } from '../src/media/comfy/health.ts';
import { submitPrompt } from './fakes/comfyui-client.ts';
import type { ManagerFlavour } from './fakes/comfyui-manager.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { defaultWorkflow } from './fakes/comfyui-workflows.ts';
import { backendSpec, startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const dispatcher = new Agent();
after(() => dispatcher.close());

const fakes: ComfyFake[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

async function stuckFake(manager: ManagerFlavour): Promise<ComfyFake> {
  const comfy = await startComfyFake({ knobs: { manager, stuck: true } });
  fakes.push(comfy);
  assert.equal((await submitPrompt(comfy, defaultWorkflow('never runs'))).status, 200);
  return comfy;
}

/** A ComfyHealth on a hand-driven clock, with its log lines kept. */
function health() {
  const clock = { now: 1_000_000 };
  const lines: { level: string; msg: string }[] = [];
  const log = {
    info: (_obj: unknown, msg: string) => void lines.push({ level: 'info', msg }),
    warn: (_obj: unknown, msg: string) => void lines.push({ level: 'warn', msg }),
  };
  return { clock, lines, comfy: new ComfyHealth({ now: () => clock.now, log: log as never }) };
}

const spec = (url: string, extra: Partial<BackendSpec> = {}): BackendSpec =>
  backendSpec({
    name: 'comfy',
    url,
    type: 'comfyui',
    stuck_after_s: 10,
    auto_restart: true,
    restart_cooldown_s: 600,
    ...extra,
  });

/** Two checks `stuck_after_s` apart: the second finds the executor stuck. */
async function checkTwice(h: ReturnType<typeof health>, s: BackendSpec): Promise<ExecutorStuck> {
  await h.comfy.check(s, s.url, dispatcher, 2000);
  h.clock.now += (s.stuck_after_s ?? 90) * 1000;
  const err = await h.comfy.check(s, s.url, dispatcher, 2000).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ExecutorStuck, `stuck, got ${String(err)}`);
  return err;
}

const reboots = (comfy: ComfyFake) =>
  comfy.requests.filter((r) => r.path.endsWith('/manager/reboot')).map((r) => `${r.method} ${r.path}`);

describe('auto_restart of a stuck ComfyUI', () => {
  test('current ComfyUI-Manager: POST /api/manager/reboot after the v4 route 404s; the box comes back unstuck', async () => {
    const comfy = await stuckFake('legacy');
    const h = health();
    const err = await checkTwice(h, spec(comfy.url));
    assert.match(err.message, /exec_stuck: .*auto_restart: reboot requested through ComfyUI-Manager/);
    const outcome = await h.comfy.lastRestart('comfy')!.done;
    assert.deepEqual(outcome, {
      ok: true,
      route: 'POST /api/manager/reboot',
      detail: 'the connection closed (the server is restarting)',
    });
    assert.deepEqual(reboots(comfy), ['POST /api/v2/manager/reboot', 'POST /api/manager/reboot']);
    const post = comfy.requests.find((r) => r.path === '/api/manager/reboot')!;
    assert.equal(
      post.headers['content-type'],
      undefined,
      "no form content type (the Manager's CSRF gate refuses those)",
    );
    assert.deepEqual(
      h.lines.map((l) => l.level),
      ['warn', 'info'],
    );
    assert.match(h.lines[0].msg, /executor stuck; asking ComfyUI-Manager to reboot it/);
    // back, with an empty queue and a running executor
    await waitFor(
      async () => (await fetch(`${comfy.url}/queue`).catch(() => undefined))?.ok === true,
      'the box is back',
    );
    assert.equal(comfy.knobs.stuck, false);
    await h.comfy.check(spec(comfy.url), comfy.url, dispatcher, 2000);
  });

  test('at most one reboot per restart_cooldown_s', async () => {
    const comfy = await stuckFake('v4');
    const h = health();
    const s = spec(comfy.url, { restart_cooldown_s: 600 });
    await checkTwice(h, s);
    assert.equal((await h.comfy.lastRestart('comfy')!.done).ok, true);
    assert.deepEqual(reboots(comfy), ['POST /api/v2/manager/reboot']);
    await waitFor(
      async () => (await fetch(`${comfy.url}/queue`).catch(() => undefined))?.ok === true,
      'the box is back',
    );

    // stuck again 5 minutes later: inside the cooldown, no second reboot
    comfy.setKnobs({ stuck: true });
    await submitPrompt(comfy, defaultWorkflow('stuck again'));
    h.clock.now += 290_000;
    const err = await checkTwice(h, s);
    assert.match(err.message, /auto_restart: a reboot was asked 300 s ago, the next is allowed in 300 s/);
    assert.equal(reboots(comfy).length, 1);

    h.clock.now += 300_000;
    await h.comfy.check(s, s.url, dispatcher, 2000).catch(() => {});
    assert.equal(
      (await h.comfy.lastRestart('comfy')!.done).ok,
      true,
      'after the cooldown the next stuck check reboots again',
    );
    assert.equal(reboots(comfy).length, 2);
  });

  test('older Managers answer GET; a locked Manager or none at all is logged, not retried within the cooldown', async () => {
    const old = await stuckFake('old');
    const h1 = health();
    await checkTwice(h1, spec(old.url));
    assert.equal((await h1.comfy.lastRestart('comfy')!.done).route, 'GET /api/manager/reboot');
    assert.deepEqual(reboots(old), [
      'POST /api/v2/manager/reboot',
      'POST /api/manager/reboot',
      'GET /api/manager/reboot',
    ]);

    const locked = await stuckFake('locked');
    const h2 = health();
    await checkTwice(h2, spec(locked.url));
    const refused = await h2.comfy.lastRestart('comfy')!.done;
    assert.equal(refused.ok, false);
    assert.match(refused.detail, /403.*security_level/);
    assert.match(h2.lines.at(-1)!.msg, /reboot failed: .*security_level/);
    assert.equal(locked.knobs.stuck, true, 'still stuck: nothing rebooted it');

    const bare = await stuckFake('none');
    const h3 = health();
    await checkTwice(h3, spec(bare.url));
    assert.match((await h3.comfy.lastRestart('comfy')!.done).detail, /no ComfyUI-Manager reboot route answered/);
    assert.equal(reboots(bare).length, 4, 'every known route was tried once');
    h3.clock.now += 1000;
    await h3.comfy.check(spec(bare.url), bare.url, dispatcher, 2000).catch(() => {});
    assert.equal(reboots(bare).length, 4, 'not again within the cooldown');
  });

  test('without auto_restart nothing is asked', async () => {
    const comfy = await stuckFake('legacy');
    const h = health();
    const err = await checkTwice(h, spec(comfy.url, { auto_restart: undefined }));
    assert.doesNotMatch(err.message, /auto_restart/);
    assert.equal(h.comfy.lastRestart('comfy'), undefined);
    assert.deepEqual(reboots(comfy), []);
  });

  test('end to end: discovery marks it exec_stuck, the gateway reboots it, it comes back healthy', async () => {
    const comfy = await stuckFake('v4');
    const gw = await startGateway([
      { name: 'comfy', url: comfy.url, type: 'comfyui', stuck_after_s: 0.05, auto_restart: true },
    ]);
    try {
      await gw.gateway.discovery.probe('comfy');
      await new Promise((r) => setTimeout(r, 80));
      await gw.gateway.discovery.probe('comfy');
      const b = (
        (await (await fetch(`${gw.url}/health`)).json()) as {
          backends: Record<string, { healthy: boolean; error: { kind: string; detail: string } | null }>;
        }
      ).backends.comfy;
      assert.equal(b.healthy, false);
      assert.equal(b.error?.kind, 'exec_stuck');
      assert.match(b.error?.detail ?? '', /auto_restart: reboot requested/);
      assert.equal((await gw.gateway.comfy.lastRestart('comfy')!.done).ok, true);
      assert.deepEqual(reboots(comfy), ['POST /api/v2/manager/reboot']);
      await waitFor(async () => {
        await gw.gateway.discovery.probe('comfy');
        return gw.gateway.registry.get('comfy')?.healthy === true;
      }, 'healthy again after the reboot');
    } finally {
      await gw.close();
    }
  });
});
