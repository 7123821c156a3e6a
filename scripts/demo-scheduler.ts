/**
 * The scheduler's prediction, one step of `npm run demo`: the aliases "ask" and "ask-now" are the
 * same model on gpu-box (local, 2 slots) and openrouter (paid); "ask" has
 * `alias_defaults.ask.spill_after_s: 30`, "ask-now" the default 0. With gpu-box's two slots
 * held by long calls, "ask-now" goes paid at once and says why in `x-gateway-route`, while a
 * stream for "ask" parks for the local box (its predicted wait is under 30 s) and its keep-alive
 * comments carry that prediction (`eta_s=`).
 *
 * A build whose scheduler predicts nothing (no `eta_s=`, no `x-gateway-route`) gets one line
 * saying the step is skipped, so the demo stays green either way.
 */
import type { FakeBackend } from '../test/fakes/index.ts';

type Say = (text: string) => void;

/** The aliases the step uses, for the demo's config. */
export function schedulerAliases(local: string, localModel: string, paid: string, paidModel: string) {
  const map = { [local]: localModel, [paid]: paidModel };
  return { virtualModels: { ask: map, 'ask-now': map }, aliasDefaults: { ask: { spill_after_s: 30 } } };
}

const HOLD_MS = 2500;

export async function schedulerWalkthrough(base: string, say: Say, n: number, gpu: FakeBackend, cloud: FakeBackend,
  localModel: string): Promise<void> {
  say(`\n${n}. the scheduler's prediction — "ask" and "ask-now" are gpu-box (local, 2 slots) or openrouter (paid);`);
  say('   both gpu-box slots are held by long calls. "ask-now" spills at once (spill_after_s 0, the default),');
  say('   "ask" has alias_defaults.ask.spill_after_s: 30: it waits for gpu-box while that wait is predicted shorter:');
  const post = (body: object) => fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const chatsOn = (fake: FakeBackend) => fake.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
  gpu.setKnobs({ latencyMs: HOLD_MS });
  const gpuBefore = chatsOn(gpu);
  const long = { model: `gpu-box/${localModel}`, messages: [{ role: 'user', content: 'a long one' }] };
  const hogs = [1, 2].map(() => post(long).then((r) => r.text()));
  for (let i = 0; i < 100 && chatsOn(gpu) < gpuBefore + 2; i++) await new Promise((r) => setTimeout(r, 10));
  gpu.setKnobs({ latencyMs: 0 }); // the hogs already sleep; the call that waits for them will not

  const now = await post({ model: 'ask-now', messages: [{ role: 'user', content: 'Say hello' }] });
  await now.text();
  const cloudBefore = chatsOn(cloud);
  const asked = await post({ model: 'ask', stream: true, messages: [{ role: 'user', content: 'Say hello' }] });
  const waited = await asked.text();
  await Promise.all(hogs);
  const comments = waited.split('\n').filter((l) => l.startsWith(':'));
  const route = now.headers.get('x-gateway-route');
  if (!route && !comments.some((c) => c.includes('eta_s='))) {
    say('   (skipped: this build\'s scheduler predicts no wait yet — no eta_s= in keep-alives, no x-gateway-route)');
    return;
  }
  say(`   "ask-now": answered by ${now.headers.get('x-gateway-backend')}, x-gateway-route: ${route ?? '(none)'}`);
  say('   "ask" parked; its keep-alive comments:');
  for (const line of comments) say(`   ${line}`);
  const where = chatsOn(cloud) > cloudBefore ? 'openrouter (it spilled after all)' : 'gpu-box, once a slot freed';
  const events = waited.split('\n').filter((l) => l.startsWith('data: {')).length;
  say(`   … then answered by ${where}: ${events} data events`);
}
