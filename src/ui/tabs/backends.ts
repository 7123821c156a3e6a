/**
 * The backends tab: every backend with its live state (kept current by a small event stream of
 * rendered fragments), add / edit with every option of its kind, enable / disable, drain,
 * remove, reset a store override, and "test connection" (a discovery dry run) before saving.
 * Every change goes through services.admin (the JSON admin API's ConfigService): a refused form
 * re-renders with each problem next to its field and nothing saved. The API key is write-only.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BackendView, Result, SaveBackendOptions, TestBackendResult } from '../../admin/config-service.ts';
import type { BackendSlotsSnapshot } from '../../scheduler/index.ts';
import type { UiContext } from '../context.ts';
import { FIELD_GROUPS, FIELDS, TYPE_LABELS } from '../backends-fields.ts';
import {
  emptyForm,
  errorsOf,
  formOf,
  readBackendForm,
  shownFor,
  typeOf,
  withOwn,
  type BackendForm,
  type FormBody,
} from '../backends-form.ts';
import { backendRow, backendsModel, Flash, type BackendsModel } from '../backends-model.ts';
import { one, ownEntry } from '../form-values.ts';
import { renderPartial } from '../partials.ts';
import { partStream } from '../part-stream.ts';
import { renderPage } from '../render.ts';

type NameParams = { Params: { name: string }; Body: FormBody };

const DONE: Record<string, (name: string) => string> = {
  added: (n) => `Added ${n}: discovery is asking it what it serves.`,
  saved: (n) => `Saved ${n}. The change is in force.`,
  enabled: (n) => `${n} is enabled.`,
  disabled: (n) => `${n} is disabled: no new work goes to it.`,
  'drain-on': (n) => `${n} is draining: no new work; what is in flight finishes.`,
  'drain-off': (n) => `${n} takes new work again.`,
  removed: (n) => `Removed ${n}.`,
  reset: (n) => `${n} is back to its config.yaml entry.`,
};

/** Model ids a test result lists (the rest is counted). */
const TEST_MODELS_SHOWN = 200;
/** Streams of the list open at once; one more is refused. */
const MAX_STREAMS = 16;

export async function backendsTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const admin = ctx.services.admin;
  const flash = new Flash();
  /** The list, with what the scheduler learnt of each backend's speed. */
  const listModel = () => backendsModel(admin.backendsView(), Date.now(), ctx.services.slots().backends);
  const slotsOf = (name: string) => ctx.services.slots().backends.find((s) => s.name === name);

  const done = (reply: FastifyReply, what: string, name: string, note?: string) => {
    const q = new URLSearchParams({ done: what, name });
    if (note) q.set('note', flash.put(note));
    return reply.redirect(`/ui/backends?${q}`, 303);
  };

  const listPage = (req: FastifyRequest, reply: FastifyReply, extra: { status?: number; problem?: string } = {}) => {
    const q = req.query as Record<string, string | undefined>;
    const name = q.name && /^[A-Za-z0-9._-]{1,128}$/.test(q.name) ? q.name : '';
    const notice = name ? ownEntry(DONE, q.done)?.(name) : undefined;
    const model = listModel();
    return renderPage(reply, 'backends', {
      title: 'Backends',
      tab: 'backends',
      notice,
      note: flash.take(q.note),
      m: model,
      parts: liveParts(model),
      ...extra,
    });
  };

  const editPage = (reply: FastifyReply, data: EditData) => {
    return renderPage(reply, 'backend-edit', editLocals(data, data.view && slotsOf(data.view.name)));
  };

  app.get('/ui/backends', async (req, reply) => listPage(req, reply));

  app.get<{ Querystring: { type?: string } }>('/ui/backends/new', async (req, reply) => {
    return editPage(reply, { form: emptyForm(typeOf(req.query.type)) });
  });

  app.post<{ Body: FormBody }>('/ui/backends', async (req, reply) => {
    const read = readBackendForm(req.body);
    const result = read.problems.length
      ? unreadable(read, { create: true })
      : admin.saveBackend(read.input, { create: true });
    if (result.ok) return done(reply, 'added', String(read.input.name), result.note);
    return refusedForm(reply, read, result, undefined);
  });

  app.get<NameParams>('/ui/backends/:name/edit', async (req, reply) => {
    const view = known(req.params.name);
    return editPage(reply, { view, form: formOf(view.spec) });
  });

  app.post<NameParams>('/ui/backends/:name/edit', async (req, reply) => {
    const view = known(req.params.name);
    const read = readBackendForm(req.body);
    const result = read.problems.length
      ? unreadable(read, { replace: view.name })
      : admin.saveBackend(read.input, { replace: view.name });
    if (result.ok) return done(reply, 'saved', String(read.input.name), result.note);
    return refusedForm(reply, read, result, view);
  });

  // discovery dry run: the form as it stands, nothing saved; `?part=1` (the page's script) answers the fragment only
  app.post<{ Body: FormBody; Querystring: { part?: string } }>('/ui/backends/test', async (req, reply) => {
    const replace = one(req.body, '_replace');
    const view = replace ? admin.backendView(replace) : undefined;
    const read = readBackendForm(req.body);
    const opts = view ? { replace: view.name } : {};
    // a form we could not even read is never probed: its every problem, the service's check of the rest too
    const tested: TestBackendResult = read.problems.length
      ? {
          ok: false,
          error: `${read.problems[0].path}: ${read.problems[0].message}`,
          problems: withOwn(read.problems, admin.checkBackend(read.input, opts)),
        }
      : await admin.testBackend(read.input, opts);
    const test = testModel(tested, read.input);
    if (req.query.part === '1')
      return reply.type('text/html; charset=utf-8').send(renderPartial('backends-test', { t: test }));
    const errors = tested.ok ? {} : errorsOf(tested.problems ?? [], read.problems);
    return editPage(reply, { view, form: read.form, errors, test, keyAgain: read.typedKey });
  });

  app.post<NameParams>('/ui/backends/:name/enabled', async (req, reply) => {
    const view = known(req.params.name);
    const enabled = ['1', 'on', 'true'].includes(one(req.body, 'enabled'));
    const result = admin.saveBackend({ ...view.spec, enabled }, { replace: view.name });
    if (result.ok) return done(reply, enabled ? 'enabled' : 'disabled', view.name, result.note);
    return listPage(req, reply, {
      status: 400,
      problem: `${view.name} cannot be ${enabled ? 'enabled' : 'disabled'}: ${problemText(result)}`,
    });
  });

  app.post<NameParams>('/ui/backends/:name/drain', async (req, reply) => {
    const view = known(req.params.name);
    const on = ['1', 'on', 'true'].includes(one(req.body, 'on'));
    const result = admin.drainBackend(view.name, on);
    if (result.ok) return done(reply, on ? 'drain-on' : 'drain-off', view.name, result.note);
    return listPage(req, reply, { status: 400, problem: problemText(result) });
  });

  app.post<NameParams>('/ui/backends/:name/remove', async (req, reply) => {
    const view = known(req.params.name);
    const result = admin.removeBackend(view.name);
    if (result.ok) return done(reply, view.source === 'store' ? 'removed' : 'disabled', view.name, result.note);
    return listPage(req, reply, { status: 400, problem: problemText(result) });
  });

  app.post<NameParams>('/ui/backends/:name/reset', async (req, reply) => {
    const view = known(req.params.name);
    const result = admin.resetBackend(view.name);
    if (result.ok) return done(reply, 'reset', view.name, result.note);
    return listPage(req, reply, { status: 400, problem: problemText(result) });
  });

  // the list's live rows: the parts that changed, once a second (public/ui.js swaps them in)
  partStream(app, ctx, {
    path: '/ui/backends/events',
    max: MAX_STREAMS,
    label: 'backends',
    parts: () => liveParts(listModel()),
  });

  function known(name: string): BackendView {
    const view = admin.backendView(name);
    if (!view) throw Object.assign(new Error(`There is no backend named "${name}".`), { statusCode: 404 });
    return view;
  }

  /**
   * A form we could not even read is never saved; the service's check (nothing saved, nothing
   * probed) names every other problem it has, so the form shows them all at once.
   */
  function unreadable(read: ReturnType<typeof readBackendForm>, opts: SaveBackendOptions): Result {
    return { ok: false, problems: admin.checkBackend(read.input, opts) };
  }

  function refusedForm(
    reply: FastifyReply,
    read: ReturnType<typeof readBackendForm>,
    result: Result,
    view: BackendView | undefined,
  ) {
    if (!result.ok && result.notFound) throw Object.assign(new Error(problemText(result)), { statusCode: 404 });
    const problems = !result.ok ? result.problems : [];
    return editPage(reply, {
      view,
      form: read.form,
      errors: errorsOf(problems, read.problems),
      status: 400,
      keyAgain: read.typedKey,
    });
  }
}

interface EditData {
  view?: BackendView;
  form: BackendForm;
  errors?: Record<string, string>;
  status?: number;
  test?: TestModel;
  /** A key was typed into a form that is shown again: it must be typed again (never sent back). */
  keyAgain?: boolean;
}

function editLocals(d: EditData, slots: BackendSlotsSnapshot | undefined) {
  const v = d.view;
  const errors = { ...(d.errors ?? {}) };
  if (d.keyAgain && !errors.api_key) errors.api_key = 'Type the key again: it is never sent back to the page.';
  const labels: Record<string, string> = Object.fromEntries(FIELDS.map((f) => [f.key, f.label]));
  const order = ['_form', ...FIELDS.map((f) => f.key)];
  const problems = Object.entries(errors).sort(([a], [b]) => order.indexOf(a) - order.indexOf(b));
  const groups = FIELD_GROUPS.map((g) => {
    const fields = g.fields.map((f) => ({ ...f, shown: shownFor(f, d.form) }));
    return { ...g, fields, shown: [...new Set(fields.flatMap((f) => f.shown.split(' ')))].join(' ') };
  });
  return {
    title: v ? `Backend ${v.name}` : 'New backend',
    tab: 'backends',
    status: d.status,
    errors,
    problems,
    labels,
    groups,
    form: d.form,
    view: v,
    row: v && backendRow(v, slots),
    typeLabels: TYPE_LABELS,
    secret: v?.spec.api_key,
    // a key pool (api_keys) is kept as it is unless a key is typed here; shown as hints only
    pool: v?.spec.api_keys,
    action: v ? `/ui/backends/${encodeURIComponent(v.name)}/edit` : '/ui/backends',
    test: d.test,
    now: Date.now(),
  };
}

export interface TestModel {
  ok: boolean;
  kind?: string;
  url: string;
  models: string[];
  total: number;
  inventory?: Record<string, number>;
  ms?: number;
  error?: string;
  errorKind?: string;
  status?: number;
  problems: { field: string; message: string }[];
}

function testModel(t: TestBackendResult, input: Record<string, unknown>): TestModel {
  const url = typeof input.url === 'string' ? input.url : '';
  if (t.ok) {
    const m: TestModel = {
      ok: true,
      kind: t.kind,
      url,
      models: t.models.slice(0, TEST_MODELS_SHOWN),
      total: t.models.length,
      ms: t.ms,
      problems: [],
    };
    if (t.inventory) m.inventory = { ...t.inventory };
    return m;
  }
  const errors = errorsOf(t.problems ?? []);
  return {
    ok: false,
    url,
    models: [],
    total: 0,
    error: t.error,
    errorKind: t.errorKind,
    status: t.status,
    problems: Object.entries(errors).map(([field, message]) => ({ field, message })),
  };
}

function problemText(result: Result): string {
  return result.ok
    ? ''
    : result.problems.map((p) => (p.path && p.path !== 'name' ? `${p.path}: ${p.message}` : p.message)).join('; ');
}

/** The live parts of the list: each row's state, load and learnt speed, and the counts. */
function liveParts(model: BackendsModel): Record<string, string> {
  const parts: Record<string, string> = { 'backends-counts': renderPartial('backends-counts', { m: model }) };
  for (const r of model.rows) {
    parts[`state:${r.name}`] = renderPartial('backends-state', { r, now: model.now });
    parts[`load:${r.name}`] = renderPartial('backends-load', { r });
    parts[`learnt:${r.name}`] = renderPartial('backends-learnt', { r });
  }
  return parts;
}
