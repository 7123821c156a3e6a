/**
 * A console client over real HTTP for the Media jobs and Playground tests: keeps cookies like
 * a browser, reads the CSRF token off each page, logs in through the form.
 */
export class ConsoleClient {
  private readonly cookies = new Map<string, string>();
  /** The CSRF token of the last page fetched. */
  csrf = '';

  constructor(readonly base: string) {}

  static async login(base: string, key: string): Promise<ConsoleClient> {
    const ui = new ConsoleClient(base);
    await ui.get('/ui/login');
    const res = await ui.post('/ui/login', { key, next: '/ui' });
    if (res.status !== 303 || res.headers.get('location') !== '/ui') throw new Error(`login failed: ${res.status}`);
    return ui;
  }

  /** The cookies as a browser context takes them (playwright). */
  cookieList(): { name: string; value: string }[] {
    return [...this.cookies].map(([name, value]) => ({ name, value }));
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    const res = await fetch(`${this.base}${path}`, { redirect: 'manual', headers: { cookie: this.cookieHeader(), ...headers } });
    this.keep(res);
    if ((res.headers.get('content-type') ?? '').startsWith('text/html')) {
      const html = await res.clone().text();
      const token = /name="csrf-token" content="([^"]+)"/.exec(html)?.[1];
      if (token) this.csrf = token;
    }
    return res;
  }

  async html(path: string): Promise<string> {
    const res = await this.get(path);
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    return res.text();
  }

  /** A form POST carrying the CSRF token (unless `csrf` is given; '' sends none). */
  async post(path: string, fields: Record<string, string>, opts: { csrf?: string } = {}): Promise<Response> {
    const body = new URLSearchParams();
    const token = opts.csrf ?? this.csrf;
    if (token !== '') body.append('_csrf', token);
    for (const [k, v] of Object.entries(fields)) body.append(k, v);
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
