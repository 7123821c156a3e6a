/**
 * The aliases tab: chat aliases (one model id for any backend serving it, or a model per
 * backend), glob aliases (`claude-*`), each with its park timeout, reasoning default and
 * sampling defaults; and the live alias → backend map with collisions, searchable (`?q=`, and
 * as you type with script). Changes go through `services.admin` (config.yaml's validation, the
 * store, applied live); an alias spans three settings, saved all or nothing (aliases-save.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UiServices } from '../services.ts';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';
import { ALIAS_SETTING_KEYS, aliasesModel, samplingSummary, stateOf } from './aliases-model.ts';
import { one, ownEntry, type FormBody } from '../form-values.ts';
import {
  emptyForm,
  errorsOf,
  formOf,
  readAliasForm,
  REASONING_CHOICES,
  SAMPLER_HINTS,
  SAMPLERS,
  tablesWith,
  tablesWithout,
  type AliasForm,
  type FieldErrors,
} from './aliases-form.ts';
import { saveSettings } from './aliases-save.ts';
import { kindOf } from '../../backends/kinds/index.ts';

const NOTICES: Record<string, (name: string) => string> = {
  saved: (n) => `Saved ${n}: it is in force now.`,
  unchanged: (n) => `${n} was already like that: nothing to save.`,
  removed: (n) => `Removed ${n}.`,
  reset: (n) => `${n} is back to config.yaml's value (or the default).`,
};

type Query = Record<string, string | undefined>;

export async function aliasesTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const { services } = ctx;

  const listPage = (req: FastifyRequest, reply: FastifyReply, extra: { status?: number; problem?: string } = {}) => {
    const query = req.query as Query;
    const notice = ownEntry(NOTICES, query.saved)?.(query.name ?? '');
    return renderPage(reply, 'aliases', {
      title: 'Aliases & routing',
      tab: 'aliases',
      notice,
      m: aliasesModel(services, query.q ?? ''),
      samplingSummary,
      ...extra,
    });
  };

  const editPage = (
    reply: FastifyReply,
    form: AliasForm,
    data: { errors?: FieldErrors; status?: number; focus?: string; glob?: boolean } = {},
  ) => {
    if (!form.rows.some((r) => !r.backend && !r.model)) form.rows.push({ backend: '', model: '' });
    const isNew = !form.original;
    const glob = data.glob ?? /[*?]/.test(form.name);
    return renderPage(reply, 'aliases-edit', {
      title: isNew ? (glob ? 'New glob alias' : 'New alias') : `Alias ${form.original}`,
      tab: 'aliases',
      status: data.status,
      errors: data.errors ?? {},
      form,
      isNew,
      glob,
      focus: data.focus,
      picker: pickerOf(services),
      samplers: SAMPLERS,
      samplerHints: SAMPLER_HINTS,
      reasoningChoices: REASONING_CHOICES,
      parkDefault: services.config().park_timeout_s,
    });
  };

  app.get('/ui/aliases', async (req, reply) => listPage(req, reply));

  app.get('/ui/aliases/new', async (req, reply) => {
    const glob = (req.query as Query).glob === '1';
    return editPage(reply, emptyForm(glob), { glob });
  });

  app.get('/ui/aliases/edit', async (req, reply) => {
    const name = (req.query as Query).name ?? '';
    const form = formOf(services.config(), name);
    if (!form) return listPage(req, reply, { status: 404, problem: `There is no alias named “${name}” (any more).` });
    return editPage(reply, form);
  });

  app.post<{ Body: FormBody }>('/ui/aliases/save', async (req, reply) => {
    const read = readAliasForm(req.body);
    const { form } = read;
    // without script, "add a backend" posts the form to get one more row; nothing is saved
    if (one(req.body, 'op') === 'add-row') {
      form.mode = 'map';
      form.rows = form.rows.filter((r) => r.backend || r.model);
      form.rows.push({ backend: '', model: '' });
      return editPage(reply, form, { focus: `map-${form.rows.length - 1}-backend` });
    }
    const cfg = services.config();
    const errors = { ...read.errors };
    const renamed = form.name !== form.original;
    if (form.name && renamed && Object.hasOwn(cfg.virtual_models, form.name)) {
      errors.name = `An alias named “${form.name}” exists already: pick another name, or edit that one.`;
    }
    if (Object.keys(errors).length || !read.value) return editPage(reply, form, { errors, status: 400 });
    const original = form.original && Object.hasOwn(cfg.virtual_models, form.original) ? form.original : '';
    const result = saveSettings(services, tablesWith(cfg, read.value, original));
    if (!result.ok) return editPage(reply, form, { errors: errorsOf(result.problems, form), status: 400 });
    const label = renamed && original ? `${original} → ${form.name}` : form.name;
    return done(reply, result.note === 'nothing changed' ? 'unchanged' : 'saved', label);
  });

  app.post<{ Body: FormBody }>('/ui/aliases/remove', async (req, reply) => {
    const name = one(req.body, 'name');
    const cfg = services.config();
    if (!Object.hasOwn(cfg.virtual_models, name))
      return listPage(req, reply, { status: 404, problem: `There is no alias named “${name}” (any more).` });
    const result = saveSettings(services, tablesWithout(cfg, name));
    if (!result.ok) {
      const first = result.problems[0];
      return listPage(req, reply, {
        status: 400,
        problem: `The alias table is refused as a whole: ${first.path}: ${first.message}. Fix that alias first.`,
      });
    }
    return done(reply, 'removed', name);
  });

  app.post<{ Body: FormBody }>('/ui/aliases/reset', async (req, reply) => {
    const key = one(req.body, 'key');
    if (!(ALIAS_SETTING_KEYS as readonly string[]).includes(key))
      return listPage(req, reply, { status: 400, problem: `${key || 'That'} is not a setting of this tab.` });
    const result = services.admin.resetSetting(key);
    if (!result.ok) return listPage(req, reply, { status: 400, problem: result.problems[0]?.message ?? 'Refused.' });
    return done(reply, 'reset', key);
  });
}

/** POST-redirect-GET to the list with a notice. */
function done(reply: FastifyReply, saved: string, name: string): FastifyReply {
  return reply.redirect(`/ui/aliases?saved=${saved}&name=${encodeURIComponent(name)}`, 303);
}

export interface PickerBackend {
  name: string;
  type: string;
  state: string;
  models: string[];
}

/** The backends a chat alias can name, each with its discovered models (for the pickers). */
function pickerOf(services: UiServices): { backends: PickerBackend[]; models: string[]; aliases: string[] } {
  const backends = services.registry
    .list()
    .filter((b) => !kindOf(b.spec).isMedia)
    .map((b) => ({
      name: b.name,
      type: b.spec.type,
      state: stateOf(services, b.name),
      models: b.models.map((m) => m.id),
    }));
  const models = [...new Set(backends.flatMap((b) => b.models))].sort();
  const aliases = Object.keys(services.config().virtual_models).filter((k) => !k.includes('*') && !k.includes('?'));
  return { backends, models, aliases };
}
