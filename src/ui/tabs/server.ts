/**
 * The server tab: every runtime setting with the value in force and where it comes from
 * (default / config.yaml / the store, and when the store overrides config.yaml), restart-only
 * ones marked; change one (services.admin.setSetting: config.yaml's own rules, applied live) or
 * reset it (resetSetting). A refused value re-renders with the problem next to its input and
 * nothing stored. Settings another tab owns (aliases, reasoning rules, generation aliases: their
 * forms check what a text box here cannot) are shown, never changed or reset here: a POST for
 * one is refused with 409 and a link to that tab. Also where the configuration comes from and
 * why the last reload of config.yaml was refused, if it was. The master key is only ever "set"
 * or "not set". The alert targets are listed apart (URLs masked), each with a "send test alert"
 * button whose POST answers the page with the outcome of that send.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UiContext } from '../context.ts';
import { Flash } from '../backends-model.ts';
import { renderPage } from '../render.ts';
import { ownEntry } from '../form-values.ts';
import { parseSetting, serverModel, settingErrors } from '../server-model.ts';
import { ELSEWHERE } from '../server-settings.ts';
import { alertsModel, type AlertTestShown } from '../server-alerts.ts';

type KeyParams = { Params: { key: string }; Body: Record<string, unknown> | undefined };

interface Owned {
  key: string;
  tab: string;
  path: string;
}

export async function serverTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const { services } = ctx;
  const admin = services.admin;
  const flash = new Flash();

  const page = (
    req: FastifyRequest,
    reply: FastifyReply,
    extra: {
      status?: number;
      typed?: Record<string, string>;
      errors?: Record<string, string>;
      owned?: Owned;
      alertTest?: AlertTestShown;
    } = {},
  ) => {
    const q = req.query as Record<string, string | undefined>;
    const views = admin.settingsView();
    const key = q.key && views.some((v) => v.key === q.key) ? q.key : undefined;
    const notice =
      key && q.done === 'saved'
        ? `Saved ${key}: in force now.`
        : key && q.done === 'reset'
          ? `${key} is back to its config.yaml value or the default.`
          : undefined;
    const restartKey = key && views.find((v) => v.key === key)?.restartOnly;
    return renderPage(reply, 'server', {
      title: 'Server',
      tab: 'server',
      status: extra.status,
      errors: extra.errors ?? {},
      notice: notice && restartKey ? notice.replace('in force now', 'in force at the next start') : notice,
      note: flash.take(q.note),
      m: serverModel(views, extra.typed, extra.errors),
      configSource: services.configSource,
      reloadProblems: services.reloadProblems(),
      owned: extra.owned,
      alerts: alertsModel(services.alerts.targetsView(), extra.alertTest),
    });
  };

  /** A setting another tab edits (its own form checks what this page cannot): refused, pointing there. */
  const ownedElsewhere = (req: FastifyRequest, reply: FastifyReply, key: string) => {
    const owner = ownEntry(ELSEWHERE, key);
    return owner ? page(req, reply, { status: 409, owned: { key, ...owner } }) : undefined;
  };

  const known = (key: string) => {
    const view = admin.settingView(key);
    if (!view) throw Object.assign(new Error(`There is no setting named "${key}".`), { statusCode: 404 });
    return view;
  };

  const done = (reply: FastifyReply, what: string, key: string, note?: string) => {
    const q = new URLSearchParams({ done: what, key });
    if (note) q.set('note', flash.put(note));
    return reply.redirect(`/ui/server?${q}#s-${key}`, 303);
  };

  app.get('/ui/server', async (req, reply) => page(req, reply));

  app.post<KeyParams>('/ui/server/:key', async (req, reply) => {
    const view = known(req.params.key);
    const owned = ownedElsewhere(req, reply, view.key);
    if (owned) return owned;
    const raw = req.body?.value;
    const text = typeof raw === 'string' ? raw : Array.isArray(raw) && typeof raw[0] === 'string' ? raw[0] : '';
    const refuse = (errors: Record<string, string>) =>
      page(req, reply, { status: 400, typed: { [view.key]: text }, errors });
    if (view.secret || !view.storable)
      return refuse({
        [view.key]: view.secret
          ? 'the master key is not changed from this page'
          : 'only config.yaml sets this (it is read at start-up)',
      });
    const parsed = parseSetting(view.key, text);
    if (!parsed.ok) return refuse({ [view.key]: parsed.message });
    const result = admin.setSetting(view.key, parsed.value);
    if (!result.ok) return refuse(settingErrors(view.key, result.problems));
    return done(reply, 'saved', view.key, result.note);
  });

  // a test send to one alert target: the page again, with how it went beside the target
  app.post<{ Params: { index: string } }>('/ui/server/alerts/:index/test', async (req, reply) => {
    const index = /^\d{1,4}$/.test(req.params.index) ? Number(req.params.index) : -1;
    const result = index >= 0 ? await services.alerts.test(index) : undefined;
    if (!result) throw Object.assign(new Error('There is no such alert target.'), { statusCode: 404 });
    return page(req, reply, { alertTest: { index, ok: result.ok, status: result.status, error: result.error } });
  });

  app.post<KeyParams>('/ui/server/:key/reset', async (req, reply) => {
    const view = known(req.params.key);
    const owned = ownedElsewhere(req, reply, view.key);
    if (owned) return owned;
    const result = admin.resetSetting(view.key);
    if (!result.ok) return page(req, reply, { status: 400, errors: settingErrors(view.key, result.problems) });
    return done(reply, 'reset', view.key, result.note);
  });
}
