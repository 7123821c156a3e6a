/**
 * The demo's unattended-operations step (scripts/demo.ts): a paid backend with a key pool whose
 * first key is rate-limited (the call moves to the second key), alerts posted to a local webhook
 * sink (gateway_started, and the sleepy box going down and up in the Wake-on-LAN step), and an
 * online backup of the store taken through the admin API while the gateway runs.
 */
import type { AlertTargetSpec, BackendSpec } from '../src/config/types.ts';
import { startKeyedBackend } from '../test/fakes/keyed-backend.ts';
import { bodyOf, startAlertSink } from '../test/helpers/alert-sink.ts';

const KEY_LIMITED = 'sk-demo-pool-rate-limited-0001';
const KEY_FREE = 'sk-demo-pool-serving-key-0002';
const MODEL = 'acme/pooled-chat';

type Say = (text: string) => void;

export async function startOpsRig(spec: (s: Partial<BackendSpec> & { name: string; url: string }) => BackendSpec) {
  const pooled = await startKeyedBackend(MODEL, {
    [KEY_LIMITED]: { status: 429, retryAfter: '30' },
    [KEY_FREE]: 'ok',
  });
  const sink = await startAlertSink();
  const alerts: AlertTargetSpec[] = [{ url: `${sink.url}/hooks/demo`, format: 'json', min_interval_s: 300 }];
  return {
    backend: spec({ name: 'pooled', url: pooled.url, paid: true, api_keys: [KEY_LIMITED, KEY_FREE] }),
    alerts,
    pooled,
    sink,
    close: async () => {
      await pooled.close();
      await sink.close();
    },
  };
}

export async function opsWalkthrough(base: string, say: Say, step: number, rig: Awaited<ReturnType<typeof startOpsRig>>) {
  say(`\n${step}. running unattended — a key pool, alerts and an online backup:`);
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: `pooled/${MODEL}`, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.text();
  say(`   api_keys: [k1, k2] — k1 answered 429 (Retry-After: 30), the call moved to k2: ${res.status}`);
  say(`   upstream requests per key: k1 ${rig.pooled.count(KEY_LIMITED)}, k2 ${rig.pooled.count(KEY_FREE)}`);
  type KeyHealth = { backends: { pooled: { keys?: { hint: string; state: string; seconds_left?: number }[] } } };
  const keys = ((await (await fetch(`${base}/health`)).json()) as KeyHealth).backends.pooled.keys ?? [];
  say(`   /health: ${keys.map((k) => `${k.hint} ${k.state}${k.seconds_left ? ` ${k.seconds_left} s` : ''}`).join(', ')}`);
  await rig.sink.waitFor(1, '/hooks/demo', 5000);
  const events = rig.sink.received.map((r) => String(bodyOf(r).event));
  say(`   alerts posted to the webhook (format json): ${events.join(', ')}`);
  const backup = await fetch(`${base}/admin/api/backup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ label: 'demo' }),
  });
  type Manifest = { folder: string; manifest: { files: { name: string; bytes: number; integrity?: string }[] } };
  const taken = (await backup.json()) as Manifest;
  const files = taken.manifest.files.map((f) => `${f.name} ${f.bytes} B${f.integrity ? ` (integrity ${f.integrity})` : ''}`);
  say(`   POST /admin/api/backup → ${backup.status} ${taken.folder}: ${files.join(', ')}`);
  say('   (npm run backup -- <dir> does the same from outside; npm run restore -- <dir> refuses while a gateway runs)');
}
