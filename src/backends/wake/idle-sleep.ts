/**
 * The owner's "go to sleep" URL (`idle_sleep.url`), called once a woken box was idle long
 * enough: one request over undici on its own pool, with a deadline. Never throws; the outcome
 * names no URL (it may hold a token).
 */
import { Agent, request } from 'undici';

const SLEEP_TIMEOUT_MS = 10_000;

export interface SleepOutcome {
  ok: boolean;
  status?: number;
  error?: string;
}

export class SleepRequester {
  private readonly agent = new Agent({
    connect: { timeout: SLEEP_TIMEOUT_MS },
    headersTimeout: SLEEP_TIMEOUT_MS,
    bodyTimeout: SLEEP_TIMEOUT_MS,
  });

  async request(url: string, method: 'POST' | 'GET' | 'PUT'): Promise<SleepOutcome> {
    try {
      const res = await request(url, {
        method,
        headers: { 'user-agent': 'llm-gateway-idle-sleep' },
        dispatcher: this.agent,
        signal: AbortSignal.timeout(SLEEP_TIMEOUT_MS),
      });
      await res.body.dump();
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return ok ? { ok, status: res.statusCode } : { ok, status: res.statusCode, error: `HTTP ${res.statusCode}` };
    } catch (err) {
      const e = err as { code?: string; name?: string };
      return { ok: false, error: e.code ?? e.name ?? 'failed' };
    }
  }

  /** Abandons a request in flight and the pool's sockets. */
  async close(): Promise<void> {
    await this.agent.destroy(new Error('the gateway is closing')).catch(() => {});
  }
}
