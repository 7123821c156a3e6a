/**
 * A console client over real HTTP: keeps cookies like a browser, reads the CSRF token off the
 * page, logs in through the form.
 */
import { request } from 'undici';
import type { TestGateway } from './gateway.ts';

/**
 * fetch, except that a `host` header is really sent (fetch always sends the URL's own): a page
 * that rebinds its name to 127.0.0.1 reaches the gateway with `Host: evil.example`.
 */
export async function fetchAs(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | URLSearchParams } = {},
): Promise<Response> {
  const headers = init.headers ?? {};
  if (!Object.keys(headers).some((k) => k.toLowerCase() === 'host')) return fetch(url, { ...init, redirect: 'manual' });
  const res = await request(url, { method: (init.method ?? 'GET') as 'GET', headers, body: init.body?.toString() });
  const out = new Headers();
  for (const [k, v] of Object.entries(res.headers))
    for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) out.append(k, one);
  const bytes = Buffer.from(await res.body.arrayBuffer());
  return new Response(res.statusCode === 204 || res.statusCode === 304 ? null : bytes, {
    status: res.statusCode,
    headers: out,
  });
}

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
    const res = await fetchAs(`${this.base}${path}`, { headers: { cookie: this.cookieHeader(), ...headers } });
    this.keep(res);
    const type = res.headers.get('content-type') ?? '';
    if (type.startsWith('text/html')) {
      const html = await res.clone().text();
      const token =
        /name="csrf-token" content="([^"]+)"/.exec(html)?.[1] ?? /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
      if (token) this.csrf = token;
    }
    return res;
  }

  async html(path: string): Promise<string> {
    const res = await this.get(path);
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
    return res.text();
  }

  /** A form POST carrying the CSRF token (unless `csrf` is given, '' for none); `headers` are sent as well. */
  async post(
    path: string,
    fields: Record<string, string | string[]>,
    opts: { csrf?: string; headers?: Record<string, string> } = {},
  ): Promise<Response> {
    const body = new URLSearchParams();
    const token = opts.csrf ?? this.csrf;
    const own = fields._csrf;
    const hasOwn = typeof own === 'string' || (Array.isArray(own) && own.length > 0);
    if (token !== '' && !hasOwn) body.append('_csrf', token);
    for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    const res = await fetchAs(`${this.base}${path}`, {
      method: 'POST',
      body,
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', ...opts.headers },
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

  /** The Cookie header this client sends (for a fetch it does not make itself, e.g. an event stream). */
  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}
