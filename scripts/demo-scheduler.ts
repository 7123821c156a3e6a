/**
 * The scheduler's prediction, one step of `npm run demo`: the aliases "ask" and "ask-now" are the
 * same model on gpu-box (local, 2 slots) and openrouter (paid); "ask" has
 * `alias_defaults.ask.spill_after_s: 30`, "ask-now" the default 0. With gpu-box's two slots
 * held by long calls, "ask-now" goes paid at once and says why in `x-gateway-route`, while a
 * stream for "ask" parks for the local box (its predicted wait is under 30 s) and its keep-alive
 * comments carry that prediction (`eta_s=`). Then a conversation's second turn goes back to the
 * box of its first (`x-gateway-route: sticky`), and with `paid_budget_usd_month` spent (set live
 * through the admin API, shown by `GET /admin/api/paid-budget`) "ask-now" parks for the local
 * box instead of going paid.
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
  say(`   "ask-now": answered by ${now.headers.get('x-gateway-backend')}, x-gateway-route: ${route ?? '(none)'}`);
  say('   "ask" parked; its keep-alive comments:');
  for (const line of comments) say(`   ${line}`);
  const where = chatsOn(cloud) > cloudBefore ? 'openrouter (it spilled after all)' : 'gpu-box, once a slot freed';
  const events = waited.split('\n').filter((l) => l.startsWith('data: {')).length;
  say(`   … then answered by ${where}: ${events} data events`);
}

/** A conversation sticks to its box; a spent paid budget keeps "ask-now" local. */
export async function stickinessAndBudget(base: string, say: Say): Promise<void> {
  const post = (body: object) => fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const first = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Name a prime.' }];
  const turn1 = await post({ model: 'ask', messages: first });
  await turn1.text();
  const more = [...first, { role: 'assistant', content: '7' }, { role: 'user', content: 'Another?' }];
  const turn2 = await post({ model: 'ask', messages: more });
  await turn2.text();
  const on = (r: Response) => r.headers.get('x-gateway-backend');
  say(`   a conversation: turn 1 on ${on(turn1)}, turn 2 on ${on(turn2)}`
    + ` (x-gateway-route: ${turn2.headers.get('x-gateway-route') ?? '(none)'}; affinity_ttl_s 300)`);
  const setting = `${base}/admin/api/settings/paid_budget_usd_month`;
  const json = { 'content-type': 'application/json' };
  await fetch(setting, { method: 'PUT', headers: json, body: JSON.stringify({ value: 0.000001 }) });
  const budgetAnswer = await fetch(`${base}/admin/api/paid-budget`);
  const budget = await budgetAnswer.json() as { budget_usd: number; spent_usd: number };
  const kept = await post({ model: 'ask-now', messages: [{ role: 'user', content: 'Say hello' }] });
  await kept.text();
  say(`   paid_budget_usd_month set to $${budget.budget_usd}`
    + ` (GET /admin/api/paid-budget: $${budget.spent_usd.toFixed(6)} spent this month):`
    + ` "ask-now" is now answered by ${on(kept)}, not the paid box`);
  await fetch(setting, { method: 'DELETE' });
}
