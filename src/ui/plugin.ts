/**
 * The /ui console: server-rendered pages (eta templates in views/, assets in public/), behind
 * a login with an admin key, a CSRF token on every change, and strict security headers. One
 * encapsulated fastify context, so its cookie, form and template plugins touch nothing of the
 * API. Each tab is a module of src/ui/tabs/ working through the same services as the JSON
 * admin API.
 */
import { randomBytes } from 'node:crypto';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import fastifyStatic from '@fastify/static';
import view from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClusterNode } from '../cluster/node.ts';
import { authRoutes, LOGIN_ATTEMPTS_PER_MINUTE, requireViewer } from './auth.ts';
import { clusterConsoleStores } from './cluster-stores.ts';
import { PUBLIC_DIR, UPLOT_DIR, VIEWS_DIR } from './paths.ts';
import { renderError, showInstance } from './render.ts';
import { Sessions } from './sessions.ts';
import { TAB_MODULES } from './tabs/index.ts';
import type { UiContext } from './context.ts';
import type { UiServices } from './services.ts';

export interface ConsoleOptions {
  services: UiServices;
  /** Cluster mode: sessions, the login throttle and the cookie secret shared through Redis; pages name the instance. */
  cluster?: ClusterNode;
}

/** Everything under /ui. */
export async function consoleRoutes(app: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  await app.register(async (ui) => {
    const shared = opts.cluster && (await clusterConsoleStores(opts.cluster, LOGIN_ATTEMPTS_PER_MINUTE));
    const ctx: UiContext = shared
      ? { services: opts.services, sessions: shared.sessions, throttle: shared.throttle }
      : { services: opts.services, sessions: new Sessions() };
    // sessions live in memory, so a per-process cookie secret loses nothing a restart keeps (a cluster shares one)
    await ui.register(cookie, { secret: shared ? shared.signer : randomBytes(32).toString('hex') });
    await ui.register(formbody, { bodyLimit: 4 * 1024 * 1024 });
    await ui.register(csrf, {
      sessionPlugin: '@fastify/cookie',
      cookieKey: 'gw_ui_csrf',
      // Secure when this request came over https (behind a trusted proxy: its X-Forwarded-Proto)
      cookieOpts: { path: '/ui', httpOnly: true, sameSite: 'strict', signed: true, secure: 'auto' },
      getToken: (req) => csrfTokenOf(req),
    });
    await ui.register(view, {
      engine: { eta: new Eta({ autoEscape: true, cache: process.env.NODE_ENV !== 'development', useWith: false }) },
      templates: VIEWS_DIR,
    });
    await ui.register(fastifyStatic, {
      root: PUBLIC_DIR,
      prefix: '/ui/assets/',
      decorateReply: false,
      maxAge: 3_600_000,
      index: false,
    });
    await ui.register(fastifyStatic, {
      root: UPLOT_DIR,
      prefix: '/ui/vendor/uplot/',
      decorateReply: false,
      maxAge: 86_400_000,
      index: false,
      allowedPath: (path) => /^\/uPlot\.(iife\.min\.js|min\.css)$/.test(path),
    });

    ui.addHook('onRequest', async (req, reply) => securityHeaders(req, reply));
    const instanceId = opts.cluster?.instanceId;
    if (instanceId !== undefined) ui.addHook('onRequest', async (req) => showInstance(req, instanceId));
    // every change is a POST with the form's (or the page's) CSRF token; checked once the body is parsed
    ui.addHook('preValidation', async (req, reply) => {
      if (req.method !== 'GET' && req.method !== 'HEAD' && !isAsset(req.url)) {
        await new Promise<void>((resolve, reject) =>
          ui.csrfProtection(req, reply, (err?: Error) => (err ? reject(err) : resolve())),
        );
      }
    });
    ui.setErrorHandler((err, req, reply) => renderError(req, reply, err));

    await authRoutes(ui, ctx);
    await ui.register(async (tabs) => {
      tabs.addHook('preHandler', (req, reply, done) => {
        requireViewer(ctx, req, reply).then(() => done(), done);
      });
      for (const register of TAB_MODULES) await register(tabs, ctx);
      // an unknown console page: a page, not the API's JSON 404
      tabs.get('/ui/*', async (req, reply) =>
        renderError(req, reply, Object.assign(new Error('There is no such page.'), { statusCode: 404 })),
      );
    });
  });
}

function csrfTokenOf(req: FastifyRequest): string {
  const body = req.body as Record<string, unknown> | undefined;
  const fromBody = body && typeof body === 'object' && typeof body._csrf === 'string' ? body._csrf : undefined;
  const header = req.headers['x-csrf-token'];
  return fromBody ?? (typeof header === 'string' ? header : '');
}

function isAsset(url: string): boolean {
  return url.startsWith('/ui/assets/') || url.startsWith('/ui/vendor/');
}

/** No framing, no inline script, nothing from elsewhere; pages are never cached. */
function securityHeaders(req: FastifyRequest, reply: FastifyReply): void {
  reply.header(
    'content-security-policy',
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
      "media-src 'self' blob:; connect-src 'self'; " +
      "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  );
  reply.header('x-frame-options', 'DENY');
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'same-origin');
  if (!isAsset(req.url)) reply.header('cache-control', 'no-store');
}
