import { Agent, request } from 'undici';
const [url, key, model] = process.argv.slice(2);
const headers: Record<string, string> = { 'content-type': 'application/json' };
if (key && key !== '-') headers.authorization = `Bearer ${key}`;
const agent = new Agent({ connections: 64 });
const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] });
let n = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: 64 }, async () => {
  while (n < 20000) { n++; const r = await request(`${url}/v1/chat/completions`, { method: 'POST', headers, body, dispatcher: agent }); await r.body.text(); }
}));
console.log('rps', (20000 / (performance.now() - t0) * 1000).toFixed(0));
await agent.close();
