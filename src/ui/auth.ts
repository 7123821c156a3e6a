/**
 * Console access: log in with an admin key (the master key or an admin user's key), get a
 * session cookie; log out ends it at once. Failed logins are rate-limited per address (an IPv6
 * client per /64). A session is re-checked on every request and, while an event stream is
 * open, every second (`stillViewing`): a logout, a disabled or demoted user, a rotated key or a
 * changed master key ends it. While the gateway is bootstrap-open the console needs no login
 * for a local request only (like the admin API: a loopback caller that addresses the gateway as
 * localhost / 127.x / [::1], not a page of another site rebinding its name to 127.0.0.1), and
 * offers to create the first admin user (its key shown once). Sessions and the throttle live in
 * `ctx` (memory, or Redis in cluster mode: src/ui/cluster-stores.ts); a memory store answers
 * synchronously, so the single-instance path never waits on a promise it does not need.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isLocalRequest, isLoopbackIp } from '../auth/loopback.ts';
import { foldIp } from '../auth/source.ts';
import type { UiContext, Viewer } from './context.ts';
import { renderPage, setViewer } from './render.ts';
import { LoginThrottle } from './login-throttle.ts';
import { keyDigest, SESSION_COOKIE, SESSION_TTL_MS, type Session, type SessionWho } from './sessions.ts';

/** Failed attempts per address and minute before the login answers 429. */
export const LOGIN_ATTEMPTS_PER_MINUTE = 10;

export async function authRoutes(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const { services } = ctx;

  app.get('/ui/login', async (req, reply) => {
    if (openHere(ctx, req)) return reply.redirect('/ui', 303);
    return loginPage(ctx, reply, req, {});
  });

  const throttle = ctx.throttle ?? new LoginThrottle(LOGIN_ATTEMPTS_PER_MINUTE);
  app.post<{ Body: { key?: unknown; next?: unknown } }>('/ui/login', async (req, reply) => {
    // one host rotates its IPv6 addresses within its /64: count them as one
    const address = foldIp(req.ip);
    const wait = await throttle.retryAfter(address, Date.now());
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return loginPage(ctx, reply, req, {
        status: 429,
        errors: { key: `Too many failed attempts from this address: try again in ${wait} s.` },
      });
    }
    const key = typeof req.body?.key === 'string' ? req.body.key.trim() : '';
    const who = key ? adminBehind(ctx, key) : undefined;
    if (!who) {
      await throttle.failed(address, Date.now());
      return loginPage(ctx, reply, req, {
        status: 401,
        errors: { key: key ? 'This is not an admin key of this gateway.' : 'Enter an admin key.' },
      });
    }
    await startSession(ctx, req, reply, who.who, who.name);
    return reply.redirect(safeNext(req.body?.next), 303);
  });

  app.post('/ui/logout', async (req, reply) => {
    reply.clearCookie(SESSION_COOKIE, { path: '/ui' });
    await ctx.sessions.delete(sessionIdOf(req)); // in cluster mode: gone for every instance
    return reply.redirect('/ui/login?bye=1', 303);
  });

  app.post('/ui/bootstrap', async (req, reply) => {
    if (!openHere(ctx, req)) {
      const message = services.authenticator.isOpen()
        ? 'This gateway is open, but the first admin user can only be created from its own host, at ' +
          'http://127.0.0.1:<port>/ui or http://localhost:<port>/ui.'
        : 'The gateway already has a master key or users: log in instead.';
      return renderPage(reply, 'error', {
        title: 'Not open',
        status: services.authenticator.isOpen() ? 403 : 409,
        message,
      });
    }
    const { user, key } = services.users.create({
      name: 'admin',
      role: 'admin',
      note: 'created from the console',
    });
    await startSession(
      ctx,
      req,
      reply,
      { kind: 'user', userId: user.id, keyDigest: services.users.digestOf(key) },
      user.name,
    );
    setViewer(req, { name: user.name, open: false });
    return renderPage(reply, 'key-once', { title: 'Admin user created', userName: user.name, key });
  });
}

/** The viewer of a console request, or a redirect to the login (GET) / a 401 (anything else). */
export async function requireViewer(ctx: UiContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const viewer = await currentViewer(ctx, req);
  if (viewer) {
    setViewer(req, viewer);
    return;
  }
  if (req.method === 'GET' || req.method === 'HEAD') {
    await reply.redirect(`/ui/login?next=${encodeURIComponent(req.url)}`, 303);
    return;
  }
  throw Object.assign(new Error('Log in to the console first.'), { statusCode: 401 });
}

/** A stream's last answer from the cluster's store, and whether a lookup is under way. */
const verdicts = new WeakMap<FastifyRequest, { ok: boolean; pending: boolean }>();

/**
 * Whether the request that opened a stream may still watch: its session re-checked now (an event
 * stream asks every tick). With sessions in Redis the lookup is asked now and its answer used at
 * the next tick (a second late); while Redis does not answer the last answer stands.
 */
export function stillViewing(ctx: UiContext, req: FastifyRequest): boolean {
  const last = verdicts.get(req);
  if (last?.pending) return last.ok;
  const viewer = currentViewer(ctx, req);
  if (!(viewer instanceof Promise)) return viewer !== undefined;
  const entry = last ?? { ok: true, pending: false };
  verdicts.set(req, entry);
  entry.pending = true;
  viewer.then(
    (v) => ((entry.ok = v !== undefined), (entry.pending = false)),
    () => (entry.pending = false),
  );
  return entry.ok;
}

function currentViewer(ctx: UiContext, req: FastifyRequest): Viewer | undefined | Promise<Viewer | undefined> {
  if (ctx.services.authenticator.isOpen())
    return isLocalRequest(req.ip, req.headers) ? { name: 'open gateway', open: true } : undefined;
  const id = sessionIdOf(req);
  const session = ctx.sessions.get(id, Date.now());
  return session instanceof Promise ? session.then((s) => viewerOf(ctx, id, s)) : viewerOf(ctx, id, session);
}

function viewerOf(ctx: UiContext, id: string | undefined, session: Session | undefined): Viewer | undefined {
  if (!session || !stillAdmin(ctx, session)) {
    // no longer an admin's: ended here (in Redis: a failed delete leaves the key to its TTL, re-checked anyway)
    if (session) void Promise.resolve(ctx.sessions.delete(id)).catch(() => {});
    return undefined;
  }
  return { name: session.name, open: false };
}

/** Open and this is a local request (`isLocalRequest`): the console needs no login. */
function openHere(ctx: UiContext, req: FastifyRequest): boolean {
  return ctx.services.authenticator.isOpen() && isLocalRequest(req.ip, req.headers);
}

/**
 * The session's holder is still an admin: same master key, or an enabled admin user whose key is still
 * the one logged in with.
 */
function stillAdmin(ctx: UiContext, session: Session): boolean {
  const who = session.who;
  if (who.kind === 'master') {
    const master = ctx.services.masterKey();
    return master !== undefined && keyDigest(master) === who.keyDigest;
  }
  const user = ctx.services.users.currentHolder(who.userId, who.keyDigest);
  return user !== undefined && user.enabled && user.role === 'admin';
}

function adminBehind(ctx: UiContext, key: string): { who: SessionWho; name: string } | undefined {
  try {
    const caller = ctx.services.authenticator.authenticate({ authorization: `Bearer ${key}` });
    if (caller.kind === 'master') return { who: { kind: 'master', keyDigest: keyDigest(key) }, name: 'master key' };
    if (caller.kind === 'user' && caller.isAdmin && caller.user) {
      return {
        who: { kind: 'user', userId: caller.user.id, keyDigest: ctx.services.users.digestOf(key) },
        name: caller.user.name,
      };
    }
  } catch {
    // a wrong or disabled key: the same answer as a non-admin one
  }
  return undefined;
}

async function startSession(
  ctx: UiContext,
  req: FastifyRequest,
  reply: FastifyReply,
  who: SessionWho,
  name: string,
): Promise<void> {
  await ctx.sessions.delete(sessionIdOf(req)); // a new login never keeps an old id
  const session = await ctx.sessions.create(who, name, Date.now());
  reply.setCookie(SESSION_COOKIE, session.id, {
    path: '/ui',
    httpOnly: true,
    sameSite: 'strict',
    secure: 'auto',
    signed: true,
    maxAge: SESSION_TTL_MS / 1000,
  });
}

function sessionIdOf(req: FastifyRequest): string | undefined {
  const raw = req.cookies[SESSION_COOKIE];
  if (!raw) return undefined;
  const unsigned = req.unsignCookie(raw);
  return unsigned.valid && unsigned.value ? unsigned.value : undefined;
}

/** Only a path inside the console: never another site, never `//host`. */
function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/ui(?:[/?#]|$)/.test(next) && !next.startsWith('//') ? next : '/ui';
}

function loginPage(
  ctx: UiContext,
  reply: FastifyReply,
  req: FastifyRequest,
  data: { status?: number; errors?: Record<string, string> },
): Promise<FastifyReply> {
  const query = req.query as Record<string, string | undefined>;
  const open = ctx.services.authenticator.isOpen();
  return renderPage(reply, 'login', {
    title: 'Log in',
    next: safeNext(query.next ?? (req.body as { next?: unknown } | undefined)?.next),
    bye: query.bye === '1',
    // open, but this request is not a local one: the console (like the admin API) stays shut
    openRemote: open && !isLoopbackIp(req.ip),
    // … from this host, but under another name (or from another site's page)
    openForeignName: open && isLoopbackIp(req.ip) && !isLocalRequest(req.ip, req.headers),
    ...data,
  });
}
