/**
 * npm run demo — a fake fleet of four OpenAI-compatible backends and an Anthropic one plus the
 * gateway wired to them, then a short walk through discovery, aliases, a paid call's cost,
 * streaming, failover, a parked stream kept alive, a refusal naming its reason
 * (error.candidates), the scheduler's prediction (a paid spill and a parked call's eta_s;
 * scripts/demo-scheduler.ts), Anthropic Messages calls (translated and passed through), the
 * Responses API with a background run, the reasoning switch, speech and transcription, the
 * `ollama` client on the gateway's native Ollama API (scripts/demo-ollama.ts), then
 * media on two fake ComfyUI boxes (scripts/demo-media.ts): generation aliases, the Images API,
 * a native async job followed through its events, a thumbnail, an edit and a parked cancel;
 * a sleeping box woken by its Wake-on-LAN packet (scripts/demo-wake.ts); a key pool, alerts and
 * an online backup (scripts/demo-ops.ts); two gateway instances sharing one Redis as one scheduler
 * (scripts/demo-cluster.ts); and the /ui console.
 * Everything listens on 127.0.0.1 only.
 *   npm run demo             keeps running after the walk-through (Ctrl-C to stop)
 *   npm run demo -- --once   exits after it
 *   PORT=0 npm run demo      on any free port (4000 by default)
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { embeddedDefaultConfig } from '../src/config/defaults.ts';
import { createLogger } from '../src/logging.ts';
import type { BackendSpec, GatewayConfig } from '../src/config/types.ts';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { ANTHROPIC_FAKE_API_KEY, startAnthropicFake, startFake } from '../test/fakes/index.ts';
import { startOllamaFake } from '../test/fakes/ollama-server.ts';
import { mediaWalkthrough, startMediaFleet } from './demo-media.ts';
import { ollamaWalkthrough } from './demo-ollama.ts';
import { startSleepyBox, wakeWalkthrough } from './demo-wake.ts';
import { opsWalkthrough, startOpsRig } from './demo-ops.ts';
import { clusterWalkthrough } from './demo-cluster.ts';
import { schedulerAliases, schedulerWalkthrough, stickinessAndBudget } from './demo-scheduler.ts';

const once = process.argv.includes('--once');
const port = Number(process.env.PORT ?? 4000);
const say = (text: string) => process.stdout.write(`${text}\n`);

const gpu = await startFake('llamacpp', { models: ['qwen3-8b-q4_k_m'], knobs: { tokensPerSecond: 40, chunkCount: 24 } });
const swap = await startFake('llamaswap', { models: ['qwen3-8b-q4_k_m', 'gemma3-12b'], knobs: { tokensPerSecond: 25 } });
const ollama = await startFake('ollama', { models: ['llama3.2:3b', 'nomic-embed-text'] });
// an Ollama server spoken to natively (type: ollama): /api/* calls pass through
const ollamaBox = await startOllamaFake({ models: ['llama3.2:latest'] });
const cloud = await startFake('openrouter', { models: ['acme/chat-large', 'acme/chat-mini', 'acme/painter-image'] });
const claude = await startAnthropicFake({ models: ['claude-sonnet-4-5-20250929'] });

const spec = (s: Partial<BackendSpec> & { name: string; url: string }): BackendSpec =>
  ({ type: 'openai', enabled: true, paid: false, local: false, chat_only: false, serverless_only: false, ...s });
const media = await startMediaFleet(spec);
const sleepy = await startSleepyBox(spec);
const ops = await startOpsRig(spec);
const spill = schedulerAliases('gpu-box', 'qwen3-8b-q4_k_m', 'openrouter', 'acme/chat-mini');
const dataDir = mkdtempSync(join(tmpdir(), 'llm-gateway-demo-'));
const config: GatewayConfig = {
  ...embeddedDefaultConfig(),
  store_dir: dataDir,
  jobs_dir: join(dataDir, 'jobs'),
  // the narrative says what happens: only errors reach the terminal, as readable lines
  log_level: 'error',
  log_format: 'pretty',
  stream_keepalive_s: 1, // 10 by default; short so the demo shows the comments
  backends: [
    spec({ name: 'gpu-box', url: gpu.url, local: true, max_concurrent: 2 }),
    spec({ name: 'swap', url: swap.url, max_concurrent: 1 }),
    spec({ name: 'ollama', url: ollama.url, local: true }),
    spec({ name: 'ollama-box', url: ollamaBox.url, type: 'ollama', local: true }),
    spec({ name: 'openrouter', url: cloud.url, paid: true, chat_only: true }),
    spec({ name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY, paid: true }),
    ...media.backends,
    sleepy.backend,
    ops.backend,
  ],
  alerts: ops.alerts,
  image_models: media.imageModels,
  virtual_models: {
    fast: 'qwen3-8b-q4_k_m',
    smart: { openrouter: 'acme/chat-large' },
    small: { ollama: 'llama3.2:3b' },
    // what Claude Code asks for by default, sent to a local model
    'claude-*': 'fast',
    sonnet: { claude: 'claude-sonnet-4-5-20250929' },
    ...spill.virtualModels,
  },
  alias_defaults: spill.aliasDefaults,
};
const logger = createLogger(config, { isTTY: process.stdout.isTTY === true });
const { app, gateway } = await buildApp({ config, configSource: 'demo (in memory)', logger });
await app.listen({ port, host: '127.0.0.1' });
await gateway.discovery.pollAll();
const bound = app.server.address();
const base = `http://127.0.0.1:${typeof bound === 'object' && bound ? bound.port : port}`; // PORT=0: any free port

say(`\nllm-gateway demo on ${base}  (fake fleet: gpu-box=llama.cpp, swap=llama-swap, ollama, ollama-box=Ollama, openrouter [paid], claude=Anthropic [paid])\n`);
const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
say(`1. discovery — GET /v1/models lists ${models.data.length} ids:`);
say(`   ${models.data.map((m) => m.id).join('\n   ')}`);
say(`   (aliases first; <backend>/<model> for every model; bare ids for local backends; openrouter's image model filtered by chat_only;`);
say('   last, sd15 and inpaint: generation aliases on ComfyUI, type "image" (section 13))\n');

say('2. an alias — "fast" is qwen3-8b on two boxes; the scheduler picks the free, unpaid, fastest one:');
const chat = await fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'Say hello' }] }),
});
const answer = (await chat.json()) as { choices: { message: { content: string } }[] };
say(`   answered by ${chat.headers.get('x-gateway-backend')}: "${answer.choices[0].message.content.slice(0, 60)}…"`);

say('   a paid one — "smart" is acme/chat-large on openrouter (paid: true), priced from its discovered catalogue:');
const paidCall = await fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'smart', messages: [{ role: 'user', content: 'Say hello' }] }),
});
await paidCall.json();
await gateway.callLog.flush();
type Price = { source: string; input?: number; output?: number };
type PricedHealth = { backends: Record<string, { pricing?: { models: Record<string, Price> } }> };
const price = ((await (await fetch(`${base}/health`)).json()) as PricedHealth)
  .backends.openrouter.pricing?.models['acme/chat-large'];
type LoggedCall = { backend: string; prompt_tokens: number; completion_tokens: number; cost_usd: number };
const calls = await fetch(`${base}/admin/api/calls?limit=1&backend=openrouter`);
const [logged] = ((await calls.json()) as { data: LoggedCall[] }).data;
say(`   price (${price?.source}): $${price?.input} in / $${price?.output} out per million tokens; the call log's row:`);
say(`   ${logged.backend}: ${logged.prompt_tokens} in + ${logged.completion_tokens} out tokens`
  + ` → cost $${logged.cost_usd.toFixed(6)}\n`);

say('3. streaming — POST /v1/chat/completions stream:true, relayed event by event:');
const stream = await fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'gpu-box/qwen3-8b-q4_k_m', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Count' }] }),
});
process.stdout.write('   ');
let usage = '';
const decoder = new TextDecoder();
let pending = '';
for await (const chunk of stream.body!) {
  pending += decoder.decode(chunk, { stream: true });
  const events = pending.split('\n\n');
  pending = events.pop()!;
  for (const ev of events) {
    const data = ev.replace(/^data: /, '');
    if (data === '[DONE]') continue;
    const parsed = JSON.parse(data) as { choices: { delta?: { content?: string } }[]; usage?: object };
    process.stdout.write(parsed.choices[0]?.delta?.content ?? '');
    if (parsed.usage) usage = JSON.stringify(parsed.usage);
  }
}
say(`\n   usage: ${usage}\n`);

// The scheduler tries a never-measured box first (so it gets measured), else the fastest:
// after step 3 that is swap. Only that box fails, once, so the call has somewhere to go.
type SpeedView = { backends: Record<string, { speed: number | null }> };
const speeds = ((await (await fetch(`${base}/health`)).json()) as SpeedView).backends;
const rank = (name: string) => speeds[name]?.speed ?? Number.POSITIVE_INFINITY;
const [first, firstName] = rank('swap') >= rank('gpu-box') ? [swap, 'swap'] as const : [gpu, 'gpu-box'] as const;
say(`4. failover — "fast" is on gpu-box and swap; ${firstName}, the scheduler's first choice, answers 500 once:`);
first.setKnobs({ errorStatus: 500, errorCount: 1 });
const seenBefore = first.requests.length;
const failedOver = await fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'Say hello again' }] }),
});
const answeredBy = failedOver.headers.get('x-gateway-backend');
const reply = (await failedOver.json()) as { choices?: { message: { content: string } }[] };
const triedFirst = first.requests.slice(seenBefore).some((r) => r.path.endsWith('/chat/completions'));
say(`   ${firstName} was ${triedFirst ? 'tried and answered 500' : 'NOT tried'}; the call moved on to ${answeredBy}.`);
say(`   the client saw none of it: status ${failedOver.status}, answered by ${answeredBy}: `
  + `"${reply.choices?.[0]?.message.content.slice(0, 40) ?? ''}…"\n`);
first.setKnobs({ errorStatus: 0, errorCount: 0 });

say('5. parked and kept alive — swap (max_concurrent 1) is busy; a stream for it waits in the queue');
say('   and gets SSE comments (stream_keepalive_s, 1 s here) until its turn:');
swap.setKnobs({ latencyMs: 2500 });
const hog = fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'swap/gemma3-12b', messages: [{ role: 'user', content: 'a long one' }] }),
});
await new Promise((r) => setTimeout(r, 100));
const parked = await (await fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'swap/gemma3-12b', stream: true, messages: [{ role: 'user', content: 'wait for me' }] }),
})).text();
await hog;
swap.setKnobs({ latencyMs: 0 });
for (const line of parked.split('\n').filter((l) => l.startsWith(':'))) say(`   ${line}`);
say(`   … then ${parked.split('\n').filter((l) => l.startsWith('data: {')).length} data events and [DONE]\n`);

type HealthBackend = { type: string; healthy: boolean; models: number; paid: boolean; speed: number | null; inventory?: Record<string, number> };
const health = (await (await fetch(`${base}/health`)).json()) as { status: string; backends: Record<string, HealthBackend> };
say(`6. GET /health — ${health.status}:`);
for (const [name, b] of Object.entries(health.backends)) {
  const comfy = b.type === 'comfyui';
  // a comfyui box lists no models: its inventory is what discovery read from /object_info
  const what = comfy && b.inventory ? `inventory=${b.inventory.checkpoints} checkpoints/${b.inventory.loras} LoRAs` : `models=${b.models}`;
  say(`   ${name.padEnd(11)} healthy=${b.healthy} ${what} paid=${b.paid} speed=${b.speed === null ? 'unmeasured' : `${b.speed.toFixed(1)} tok/s`}`);
}
const ready = await fetch(`${base}/health/ready`);
type Ready = { status: string; checks: { backends: { up: number; enabled: number } } };
const readyBody = (await ready.json()) as Ready;
say(`   GET /health/ready → ${ready.status} ${readyBody.status} (store writable, config in force, ${readyBody.checks.backends.up} of ${readyBody.checks.backends.enabled} backends up)`);
type Deep = { backends: Record<string, { circuit: string; failures: { total: number } }> };
const deep = (await (await fetch(`${base}/health/deep`)).json()) as Deep;
say(`   GET /health/deep → circuits: ${Object.entries(deep.backends).map(([n, b]) => `${n} ${b.circuit}`).join(', ')}`);
say('\n   a refusal says why: swap drained (POST /admin/api/backends/swap/drain), then a call only swap serves:');
await fetch(`${base}/admin/api/backends/swap/drain`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ on: true }),
});
const refused = await fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'swap/gemma3-12b', messages: [{ role: 'user', content: 'hi' }] }),
});
type Refusal = { error: { code: string; message: string; candidates?: { backend?: string; reason: string }[] } };
const refusal = ((await refused.json()) as Refusal).error;
say(`   ${refused.status} ${refusal.code}: "${refusal.message}"`);
say(`   error.candidates: ${JSON.stringify(refusal.candidates)}`);
await fetch(`${base}/admin/api/backends/swap/drain`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ on: false }),
});

await schedulerWalkthrough(base, say, 7, gpu, cloud, 'qwen3-8b-q4_k_m');
await stickinessAndBudget(base, say);

say('\n8. Anthropic Messages (Claude Code, @anthropic-ai/sdk) — POST /v1/messages:');
const sdk = new Anthropic({ baseURL: base, apiKey: 'demo', maxRetries: 0 });
const translated = await sdk.messages.stream({
  model: 'claude-opus-4-8', max_tokens: 200, messages: [{ role: 'user', content: 'Say hello' }],
}).finalMessage();
const textOf = (m: Anthropic.Message) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
say(`   "claude-opus-4-8" matches the glob alias "claude-*" → fast → a local llama.cpp box, translated:`);
say(`   ${translated.content.map((b) => b.type).join(' + ')} block(s), stop_reason ${translated.stop_reason}: "${textOf(translated).slice(0, 50)}…"`);
const passed = await sdk.messages.create({ model: 'sonnet', max_tokens: 200, messages: [{ role: 'user', content: 'Say hello' }] }).withResponse();
say(`   "sonnet" → the anthropic backend, verbatim: answered by ${passed.response.headers.get('x-gateway-backend')}, model ${passed.data.model}`);
const boundary = await fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'hi' }] }),
});
say(`   the same alias on /v1/chat/completions: ${boundary.status} — ${((await boundary.json()) as { error: { message: string } }).error.message}`);
const counted = await sdk.messages.countTokens({ model: 'claude-opus-4-8', messages: [{ role: 'user', content: 'How many tokens is this?' }] });
say(`   count_tokens (no slot taken): ${counted.input_tokens} input tokens (estimated for a local model)`);

say('\n9. the Responses API (the Vercel AI SDK\'s default) on a chat-only llama.cpp box, translated:');
const oai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'demo', maxRetries: 0 });
const resp = await oai.responses.create({ model: 'fast', input: 'Say hello', instructions: 'Be brief.' });
say(`   ${resp.id.slice(0, 16)}… status ${resp.status}: "${resp.output_text.slice(0, 40)}…" (${resp.usage?.input_tokens} in / ${resp.usage?.output_tokens} out)`);
const bg = await oai.responses.create({ model: 'fast', input: 'Take your time', background: true });
let polled = bg;
while (polled.status === 'queued' || polled.status === 'in_progress') {
  await new Promise((r) => setTimeout(r, 100));
  polled = await oai.responses.retrieve(bg.id);
}
say(`   background: answered "${bg.status}" at once, then polled until "${polled.status}"`);

say('\n10. one reasoning switch — reasoning:"off" on a Qwen3 model, applied the way its backend understands:');
const switched = await fetch(`${base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'gpu-box/qwen3-8b-q4_k_m', reasoning: 'off', messages: [{ role: 'user', content: 'Quick answer' }] }),
});
await switched.text();
say(`   x-reasoning-control: ${switched.headers.get('x-reasoning-control')} (the built-in Qwen3 rule: chat_template_kwargs.enable_thinking = false)`);

say('\n11. speech — POST /v1/audio/speech through the same scheduler, audio streamed back as it comes:');
const speech = await oai.audio.speech.create({ model: 'swap/qwen3-8b-q4_k_m', voice: 'alloy', input: 'Hello from the gateway' });
const audio = Buffer.from(await speech.arrayBuffer());
say(`   ${audio.length} bytes of ${speech.headers.get('content-type')} from ${speech.headers.get('x-gateway-backend')}`);
const heard = await oai.audio.transcriptions.create({ model: 'swap/qwen3-8b-q4_k_m', file: await toFile(audio, 'hello.mp3') });
say(`   and back: POST /v1/audio/transcriptions (multipart) → "${heard.text.slice(0, 50)}"`);

await ollamaWalkthrough(base, say, 12);

await mediaWalkthrough(base, oai, say, 13);

await wakeWalkthrough(base, say, 14, sleepy, () => gateway.discovery.probe('sleepy'));

await opsWalkthrough(base, say, 15, ops);

await clusterWalkthrough(say, 16, spec);

say('\n17. the console — /ui, server-rendered, live over one event stream:');
for (const path of ['/ui', '/ui/backends', '/ui/calls', '/ui/stats', '/ui/jobs']) {
  const page = await fetch(`${base}${path}`);
  const title = /<title>([^<]*)<\/title>/.exec(await page.text())?.[1] ?? '';
  say(`   GET ${path.padEnd(13)} ${page.status} "${title}"`);
}
say('   (this demo gateway is open — no api_key, no users — so the console needs no login from this host;');
say('    with a key it asks for an admin key, and "Create an admin user" locks an open gateway from the banner)');

say(`\nTry it yourself:\n   open ${base}/ui   # the console: dashboard, backends, aliases, mapping, playground, calls, jobs, stats, users, server\n   curl ${base}/v1/models\n   curl ${base}/v1/chat/completions -H 'content-type: application/json' -d '{"model":"smart","messages":[{"role":"user","content":"hi"}],"stream":true}'\n   ANTHROPIC_BASE_URL=${base} ANTHROPIC_API_KEY=demo claude   # Claude Code, on the local fleet`);
say(`   OLLAMA_HOST=${base} ollama run fast   # any Ollama client, on the whole fleet`);
say(`   curl ${base}/v1/images/generations -H 'content-type: application/json' -d '{"model":"sd15","prompt":"a lighthouse","response_format":"url"}'`);
say(`   curl -N ${base}/v1/jobs/<job_id>/events   # after POST /v1/generations {"model":"sd15","prompt":"…","mode":"async"}`);
say('');

const stop = async () => {
  await app.close();
  await Promise.all([gpu, swap, ollama, ollamaBox, cloud, claude].map((f) => f.close()));
  await media.close();
  await sleepy.close();
  await ops.close();
  process.exit(0);
};
if (once) await stop();
else {
  say('Running; Ctrl-C to stop.');
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
