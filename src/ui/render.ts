/**
 * Rendering a console page: the tab's template inside the layout, with what every page
 * needs (CSRF token, navigation, who is looking, formatters). Templates escape by default
 * (`<%= %>`); raw output (`<%~ %>`) is for the layout's body and trusted partials only.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Viewer } from './context.ts';
import { STORE_UNREACHABLE } from './cluster-stores.ts';
import { fmt } from './format.ts';
import { TABS } from './tabs/list.ts';

export interface PageData {
  title: string;
  /** The tab to highlight (a TABS id); none for the login page. */
  tab?: string;
  status?: number;
  /** Field-level problems of a refused form: field → message. */
  errors?: Record<string, string>;
  /** A one-line notice at the top (saved, deleted…). */
  notice?: string;
  [key: string]: unknown;
}

const viewers = new WeakMap<FastifyRequest, Viewer>();
/** Cluster mode: the instance answering, named at the foot of every page. */
const instances = new WeakMap<FastifyRequest, string>();

export function showInstance(req: FastifyRequest, instanceId: string): void {
  instances.set(req, instanceId);
}

export function setViewer(req: FastifyRequest, viewer: Viewer): void {
  viewers.set(req, viewer);
}

export function viewerOf(req: FastifyRequest): Viewer | undefined {
  return viewers.get(req);
}

export async function renderPage(reply: FastifyReply, template: string, data: PageData): Promise<FastifyReply> {
  const html = await renderHtml(reply, template, data);
  return reply
    .code(data.status ?? 200)
    .type('text/html; charset=utf-8')
    .send(html);
}

/** The page's HTML: `views/<template>.eta` inside the layout, with what every page gets (what renderPage sends). */
export async function renderHtml(reply: FastifyReply, template: string, data: PageData): Promise<string> {
  const viewer = viewerOf(reply.request);
  const instanceId = instances.get(reply.request);
  const locals = {
    errors: {},
    notice: undefined,
    ...data,
    csrf: reply.generateCsrf(),
    nav: TABS,
    viewer,
    fmt,
    instanceId,
  };
  return reply.viewAsync(`${template}.eta`, locals, { layout: 'layout.eta' }) as Promise<string>;
}

/** An error as a page (or JSON for the console's own fetches). Never a stack or a secret. */
export async function renderError(req: FastifyRequest, reply: FastifyReply, err: unknown): Promise<FastifyReply> {
  const e = err as { statusCode?: number; status?: number; message?: string; code?: string };
  let status = e.statusCode ?? e.status ?? 500;
  if (status < 400 || status > 599) status = 500;
  const csrfFailed = typeof e.code === 'string' && e.code.startsWith('FST_CSRF');
  // cluster mode, Redis not answering: its own words, a warning without a stack (src/ui/cluster-stores.ts)
  const storeDown = e.code === STORE_UNREACHABLE && status === 503;
  const message = csrfFailed
    ? 'This form has expired or did not come from this console (CSRF check failed). Reload the page and try again.'
    : storeDown
      ? (e.message ?? 'The cluster store is unreachable.')
      : status >= 500
        ? 'Something went wrong on the gateway; the log has the details.'
        : (e.message ?? 'Request refused.');
  if (storeDown) {
    req.log.warn('console request refused: the cluster store (Redis) is unreachable');
    reply.header('retry-after', '5');
  } else if (status >= 500) req.log.error({ err }, 'console request failed');
  if (wantsJson(req))
    return reply
      .code(status)
      .send({ error: { message, type: 'invalid_request_error', param: null, code: e.code ?? 'error' } });
  try {
    return await renderPage(reply, 'error', { title: `Error ${status}`, status, message });
  } catch {
    return reply.code(status).type('text/plain; charset=utf-8').send(message);
  }
}

function wantsJson(req: FastifyRequest): boolean {
  const accept = req.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}
