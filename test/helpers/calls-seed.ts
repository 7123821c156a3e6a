/**
 * Realistic call-log rows for the console's LLM calls and Statistics tabs: a fleet of local
 * GPUs and paid clouds, models tied to their backends, a dozen sources, refusals with their
 * reasons, streamed calls with ttft, prompt-cache reads and writes only where a backend
 * reports them. Deterministic (seeded). Recorded through the CallLog's own API.
 */
import type { CallLog } from '../../src/stats/call-log.ts';
import type { CallRecord } from '../../src/stats/record.ts';
import { prng } from './prng.ts';

interface Box {
  backend: string;
  models: string[];
  paid: boolean;
  cache: 'reads' | 'writes' | 'none';
  speed: number;
}

export const SEED_FLEET: readonly Box[] = [
  { backend: 'gpu-4090', models: ['qwen3-30b-a3b', 'qwen3-8b'], paid: false, cache: 'reads', speed: 90 },
  { backend: 'gpu-3090', models: ['llama-3.1-8b', 'gemma-3-12b'], paid: false, cache: 'none', speed: 60 },
  { backend: 'mac-studio', models: ['gpt-oss-120b'], paid: false, cache: 'none', speed: 35 },
  {
    backend: 'openrouter',
    models: ['anthropic/claude-sonnet-4.6', 'openai/gpt-5-mini', 'deepseek/deepseek-v3.2'],
    paid: true,
    cache: 'reads',
    speed: 70,
  },
  { backend: 'anthropic', models: ['claude-opus-4-1', 'claude-haiku-4-5'], paid: true, cache: 'writes', speed: 55 },
];
export const SEED_SOURCES = [
  'alice',
  'bob',
  'n8n',
  'home-assistant',
  'claude-code',
  'open-webui',
  'kids-laptop',
  '192.168.1.40',
  'paperless',
  'ci-runner',
  'obsidian',
  'mum',
];
const REASONS = ['unknown_model', 'quota_day', 'park_timeout', 'no_backend'];

export interface SeedOptions {
  /** Calls to record. */
  count: number;
  /** The newest call's time (unix ms); default now. */
  now?: number;
  /** Days the calls spread over, oldest first (ts grows with id, as in a live log). */
  days?: number;
  seed?: number;
  /** Also record a few rows with XSS-shaped backend, model, source and reason. */
  xss?: boolean;
}

export const XSS = '<script>alert(1)</script>';

/** One seeded call (i of n), the ts spread evenly with jitter, more in daytime hours. */
export function seededCalls(opts: SeedOptions): CallRecord[] {
  const random = prng(opts.seed ?? 7);
  const now = opts.now ?? Date.now();
  const span = (opts.days ?? 30) * 86_400_000;
  const out: CallRecord[] = [];
  for (let i = 0; i < opts.count; i++) {
    let ts = now - span + Math.floor(((i + random()) / opts.count) * span);
    const hour = new Date(ts).getUTCHours();
    if (hour < 6 && random() < 0.6) ts += 8 * 3_600_000 * random(); // fewer calls at night
    ts = Math.min(now - 1, Math.floor(ts));
    const box = SEED_FLEET[Math.floor(random() ** 1.4 * SEED_FLEET.length)];
    const model = box.models[Math.floor(random() * box.models.length)];
    const source = SEED_SOURCES[Math.floor(random() ** 1.6 * SEED_SOURCES.length)];
    const roll = random();
    if (roll < 0.03) {
      const reason = REASONS[Math.floor(random() * REASONS.length)];
      out.push(
        row({
          ts,
          backend: '(refused)',
          model: null,
          requested_model: reason === 'unknown_model' ? 'gpt-4o' : model,
          source,
          status: reason === 'quota_day' ? 429 : reason === 'park_timeout' ? 503 : 404,
          reason,
          duration_ms: 1 + Math.floor(random() * 4),
          prompt_tokens: 0,
          completion_tokens: 0,
          ttft_ms: null,
        }),
      );
      continue;
    }
    const failed = roll < 0.055;
    const prompt = Math.floor(200 + random() ** 2 * 12_000);
    const completion = failed ? 0 : Math.floor(20 + random() ** 1.5 * 1_500);
    const ttft = Math.floor(80 + random() ** 2 * (box.paid ? 1_800 : 900) + prompt / 40);
    const duration = failed
      ? Math.floor(200 + random() * 5_000)
      : ttft + Math.floor((completion / box.speed) * 1000 * (0.7 + random() * 0.6));
    const cached = box.cache !== 'none' && !failed && random() < 0.6 ? Math.floor(prompt * (0.4 + random() * 0.5)) : 0;
    const written = box.cache === 'writes' && !failed && random() < 0.3 ? Math.floor((prompt - cached) * 0.8) : 0;
    const cost = box.paid
      ? ((prompt - cached - written) * 3 + cached * 0.3 + written * 3.75 + completion * 15) / 1e6
      : 0;
    out.push(
      row({
        ts,
        backend: box.backend,
        model,
        requested_model: random() < 0.4 ? 'fast' : model,
        source,
        status: failed ? (random() < 0.5 ? 502 : 499) : 200,
        reason: failed ? (random() < 0.5 ? 'upstream_error' : 'client_closed') : null,
        duration_ms: duration,
        ttft_ms: random() < 0.75 ? ttft : null,
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: cached,
        cache_write_tokens: written,
        cost_usd: cost,
        paid: box.paid,
        reasoning: random() < 0.15 ? 'chat_template_kwargs.enable_thinking=false' : null,
        upstream_cost_usd: box.backend === 'openrouter' ? cost * 1.05 : null,
        usage_estimated: !failed && random() < 0.02,
      }),
    );
  }
  if (opts.xss) {
    const ts = now - 60_000;
    out.push(
      row({
        ts,
        backend: XSS,
        model: XSS,
        requested_model: XSS,
        source: XSS,
        status: 200,
        reason: null,
        reasoning: XSS,
        prompt_tokens: 10,
        completion_tokens: 5,
      }),
    );
    out.push(
      row({
        ts: ts + 1,
        backend: '(refused)',
        model: null,
        requested_model: XSS,
        source: XSS,
        status: 404,
        reason: XSS,
        prompt_tokens: 0,
        completion_tokens: 0,
      }),
    );
  }
  return out;
}

let seq = 0;
function row(over: Partial<CallRecord>): CallRecord {
  return {
    ts: Date.now(),
    request_id: `seed-${++seq}-${Math.random().toString(36).slice(2, 10)}`,
    duration_ms: 10,
    ttft_ms: null,
    endpoint: '/v1/chat/completions',
    source: 'alice',
    user_id: null,
    requested_model: 'm',
    model: 'm',
    backend: 'b',
    status: 200,
    reason: null,
    prompt_tokens: 1,
    completion_tokens: 1,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning: null,
    cost_usd: 0,
    upstream_cost_usd: null,
    ...over,
  };
}

/** Records the seeded calls and waits until they are on disk (aggregates read the disk). */
export async function seedCallLog(log: CallLog, opts: SeedOptions): Promise<number> {
  const calls = seededCalls(opts);
  // in slices: the call log holds at most 100,000 unwritten rows
  for (let i = 0; i < calls.length; i += 10_000) {
    for (const c of calls.slice(i, i + 10_000)) log.record(c);
    await log.flush();
  }
  return calls.length;
}
