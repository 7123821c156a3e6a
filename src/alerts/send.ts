/**
 * One alert POST over undici, on the alerts' own connection pool (so closing abandons what is
 * in flight), with a deadline for the whole exchange; a URL's userinfo is sent as Basic
 * credentials. Never throws: the outcome says what happened, in words free of the URL's secrets.
 */
import { Agent, request } from 'undici';
import type { AlertPost } from './format.ts';
import { alertUrlSecrets, withoutSecrets } from './mask.ts';

export interface SendOutcome {
  ok: boolean;
  /** The HTTP status, when an answer came. */
  status?: number;
  /** Why it failed (no URL in it). */
  error?: string;
  ms: number;
}

export class AlertSender {
  private readonly agent: Agent;

  constructor(private readonly timeoutMs: number) {
    this.agent = new Agent({ connect: { timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  async send(url: string, post: AlertPost): Promise<SendOutcome> {
    const started = Date.now();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    timer.unref();
    try {
      const { target, authorization } = withoutUserinfo(url);
      const res = await request(target, {
        method: 'POST',
        headers: { 'user-agent': 'llm-gateway-alerts', ...authorization, ...post.headers },
        body: post.body,
        dispatcher: this.agent,
        signal: abort.signal,
      });
      await res.body.dump();
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return { ok, status: res.statusCode, ms: Date.now() - started, ...(!ok && { error: `HTTP ${res.statusCode}` }) };
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const text = [e.code, e.message].filter(Boolean).join(': ') || 'failed';
      return { ok: false, error: withoutSecrets(text, alertUrlSecrets(url)), ms: Date.now() - started };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Abandons every send in flight (their outcomes say so) and the pool's sockets. */
  async close(): Promise<void> {
    await this.agent.destroy(new Error('the gateway is closing')).catch(() => {});
  }
}

/** A URL's userinfo (`https://user:pw@ntfy.example/topic`) goes as Basic credentials, not in the URL. */
function withoutUserinfo(url: string): { target: string; authorization?: { authorization: string } } {
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return { target: url };
  const pair = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  return { target: parsed.href, authorization: { authorization: `Basic ${Buffer.from(pair).toString('base64')}` } };
}
