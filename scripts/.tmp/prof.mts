import { Agent, request } from 'undici';
import { startFake } from '../../test/fakes/index.ts';
import { startGateway } from '../../test/helpers/gateway.ts';
const mode = process.argv[2];
const fake = await startFake('vllm', { models: ['bench'] });
const gw = await startGateway([{ name: 'ns', url: fake.url }], mode === 'on' ? { api_key: 'bench-master-key-000000', call_log: true, log_level: 'warn' } : { call_log: false, log_level: 'warn' });
let headers: Record<string, string> = { 'content-type': 'application/json' };
if (mode === 'on') {
  const u = await fetch(`${gw.url}/admin/api/users`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer bench-master-key-000000' }, body: JSON.stringify({ name: 'b', quota_req_day: 100000000 }) }).then((r) => r.json() as any);
  headers = { ...headers, authorization: `Bearer ${u.key}` };
}
const agent = new Agent({ connections: 64 });
const body = JSON.stringify({ model: 'ns/bench', messages: [{ role: 'user', content: 'hi' }] });
let n = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: 64 }, async () => {
  while (n < 20000) { n++; const r = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body, dispatcher: agent }); await r.body.text(); }
}));
console.log(mode, 'rps', (20000 / (performance.now() - t0) * 1000).toFixed(0));
await agent.close(); await gw.close(); await fake.close();
