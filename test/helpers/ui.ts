/**
 * A console client over real HTTP: keeps cookies like a browser, reads the CSRF token off the
 * page, logs in through the form.
 */
import type { TestGateway } from './gateway.ts';

export class UiClient {
  private readonly cookies = new Map<string, string>();
  /** The CSRF token of the last page fetched. */
  csrf = '';

  constructor(readonly base: string) {}

  static async login(gw: TestGateway | { url: string }, key: string): Promise<UiClient> {
    const ui = new UiClient(gw.url);
    await ui.get('/ui/login');
    const res = await ui.post('/ui/login', { key, next: '/ui' });
    if (res.status !== 303 || res.headers.get('location') !== '/ui') throw new Error(`login failed: ${res.status}`);
    return ui;
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    const res = await fetch(`${this.base}${path}`, { redirect: 'manual', headers: { cookie: this.cookieHeader(), ...headers } });
    this.keep(res);
    const type = res.headers.get('content-type') ?? '';
    if (type.startsWith('text/html')) {
      const html = await res.clone().text();
      const token = /name="csrf-token" content="([^"]+)"/.exec(html)?.[1] ?? /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
      if (token) this.csrf = token;
    }
    return res;
  }

  async html(path: string): Promise<string> {
    const res = await this.get(path);
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
    return res.text();
  }

  /** A form POST carrying the CSRF token (unless `csrf` is given, '' for none). */
  async post(path: string, fields: Record<string, string | string[]>, opts: { csrf?: string } = {}): Promise<Response> {
    const body = new URLSearchParams();
    const token = opts.csrf ?? this.csrf;
    const own = fields._csrf;
    const hasOwn = typeof own === 'string' || (Array.isArray(own) && own.length > 0);
    if (token !== '' && !hasOwn) body.append('_csrf', token);
    for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    const res = await fetch(`${this.base}${path}`, {
      method: 'POST', redirect: 'manual', body,
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
    });
    this.keep(res);
    return res;
  }

  private keep(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}
