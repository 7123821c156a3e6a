/**
 * The mapping tab: the generation aliases (`image_models`) with their candidates, output kind
 * and problems; registering a ComfyUI workflow (pasted, or a .json file the page reads into
 * the text box) with the compiler's suggested mapping; the editor (mapping rows fed by each
 * backend's /object_info, pins per backend, image-slot modes, bypass, output node, LoRA slots);
 * a dry-run compile (nothing stored, no job) showing the final workflow's diff; save and delete.
 *
 * Every change is one `services.admin.setSetting('image_models', …)` of the whole table: the
 * service checks it with config.yaml's validation and the compiler's `validateAlias` against
 * each backend's object_info (an unknown node, a field the class lacks refuse the save with
 * nothing written); its key paths are placed next to their field. The editor shows the
 * service's check of the alias as it stands (`services.admin.checkImageAlias`), warnings too.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ImageModelEntry } from '../../config/types.ts';
import type { SettingView } from '../../admin/config-service.ts';
import type { UiContext } from '../context.ts';
import { dryRun, sampleRequest, type DryRun } from '../mapping-dryrun.ts';
import { many, one, type FormBody } from '../form-values.ts';
import {
  entriesOf,
  parseWorkflow,
  readState,
  rowProblems,
  stateForNew,
  stateFromEntries,
  usedBackends,
  type EditorState,
} from '../mapping-form.ts';
import { placeProblems, type PlacedProblem } from '../mapping-problems.ts';
import { editorModel, listModel, type FleetBackend } from '../mapping-model.ts';
import { renderPage } from '../render.ts';
import { kindOf } from '../../backends/kinds/index.ts';

type AliasParams = { Params: { alias: string }; Body: FormBody };

interface RegisterForm {
  alias: string;
  workflow: string;
  backends: string[];
}

interface EditorView {
  state: EditorState;
  status?: number;
  errors?: Record<string, string>;
  placed?: PlacedProblem[];
  warnings?: string[];
  dry?: DryRun;
  notice?: string;
  /** Set by a refused save: the summary says nothing was saved. */
  refused?: boolean;
}

export async function mappingTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const { services } = ctx;
  const comfyBackends = () => services.config().backends.filter((b) => kindOf(b).isMedia);
  const comfyNames = () => comfyBackends().map((b) => b.name);
  const infoOf = (name: string) => services.comfy.objectInfo(name);
  const check = (alias: string, entries: ImageModelEntry[]) => services.admin.checkImageAlias(alias, entries);
  const models = () => services.config().image_models ?? {};
  const view = () => services.admin.settingView('image_models') as SettingView | undefined;
  const fleet = (): FleetBackend[] =>
    comfyBackends().map((b) => {
      const info = infoOf(b.name);
      const loras = services.comfy.inventory(b.name)?.loras.length;
      return {
        name: b.name,
        enabled: b.enabled,
        healthy: services.registry.get(b.name)?.healthy ?? false,
        ...(info ? { info } : {}),
        ...(loras !== undefined ? { loras } : {}),
      };
    });

  const listPage = (
    req: FastifyRequest,
    reply: FastifyReply,
    extra: { status?: number; form?: RegisterForm; errors?: Record<string, string>; problem?: string } = {},
  ) => {
    const query = req.query as Record<string, string | undefined>;
    const v = view();
    const m = listModel({
      models: models(),
      candidates: (alias) => services.generations.get(alias)?.candidates,
      problems: services.generations.problems(),
      infoOf,
      source: v?.source ?? 'default',
      overridden: v?.overridden ?? false,
      fileValue: v?.fileValue,
    });
    const notice =
      query.saved === 'deleted'
        ? `Deleted ${query.name ?? 'the alias'}: clients can no longer use it.`
        : query.saved === 'reset'
          ? "The store's generation aliases are removed: config.yaml's (or none) are in force."
          : undefined;
    const names = comfyNames();
    return renderPage(reply, 'mapping', {
      title: 'Mapping',
      tab: 'mapping',
      status: extra.status,
      notice,
      m,
      problem: extra.problem,
      errors: extra.errors ?? {},
      form: extra.form ?? { alias: '', workflow: '', backends: names },
      comfy: names,
    });
  };

  const editorPage = (reply: FastifyReply, v: EditorView) => {
    const parsed = parseWorkflow(v.state.workflowText);
    const errors = { ...(v.errors ?? {}) };
    if (!parsed.ok) errors.workflow ??= parsed.message;
    const s = view();
    return renderPage(reply, 'mapping-edit', {
      title: v.state.original ? `Mapping · ${v.state.original}` : 'Mapping · new alias',
      tab: 'mapping',
      status: v.status,
      notice: v.notice,
      state: v.state,
      isNew: v.state.original === '',
      m: parsed.ok ? editorModel(v.state, parsed.workflow, fleet()) : undefined,
      nodeCount: parsed.ok ? Object.keys(parsed.workflow).length : 0,
      errors,
      placed: v.placed ?? [],
      warnings: v.warnings ?? [],
      dry: v.dry,
      refused: v.refused ?? false,
      source: s?.source ?? 'default',
      overridden: s?.overridden ?? false,
    });
  };

  app.get('/ui/mapping', async (req, reply) => listPage(req, reply));

  app.post<{ Body: FormBody }>('/ui/mapping/register', async (req, reply) => {
    const names = comfyNames();
    const form: RegisterForm = {
      alias: one(req.body, 'alias').trim(),
      workflow: one(req.body, 'workflow'),
      backends: many(req.body, 'backends').filter((b) => names.includes(b)),
    };
    const errors: Record<string, string> = {};
    if (form.alias === '') errors.alias = 'Name the alias: clients send it as "model".';
    else if (Object.hasOwn(models(), form.alias))
      errors.alias = `An alias named "${form.alias}" exists already: edit it from the list.`;
    const parsed = parseWorkflow(form.workflow);
    if (!parsed.ok) errors.workflow = parsed.message;
    if (names.length === 0) errors.backends = 'There is no comfyui backend: add one on the Backends tab first.';
    else if (form.backends.length === 0) errors.backends = 'Choose at least one backend to run it on.';
    if (Object.keys(errors).length > 0 || !parsed.ok) return listPage(req, reply, { status: 400, form, errors });
    const state = stateForNew(form.alias, form.workflow, parsed.workflow, form.backends, names);
    const { entries, index } = entriesOf(state, parsed.workflow, infoOf);
    const placed = placeProblems(check(state.alias, entries).problems, state, index);
    return editorPage(reply, {
      state,
      placed: placed.placed,
      errors: placed.errors,
      notice: 'The suggested mapping is filled in: check it, then save. Nothing is stored yet.',
    });
  });

  app.get<AliasParams>('/ui/mapping/:alias', async (req, reply) => {
    const alias = req.params.alias;
    const table = models();
    // own keys only: `__proto__` or `constructor` is no alias
    const entries = Object.hasOwn(table, alias) ? table[alias] : undefined;
    if (!Array.isArray(entries))
      throw Object.assign(new Error(`There is no generation alias "${alias}".`), { statusCode: 404 });
    const { state, warnings } = stateFromEntries(alias, entries, comfyNames(), infoOf);
    const parsed = parseWorkflow(state.workflowText);
    let placed = { placed: [] as PlacedProblem[], errors: {} as Record<string, string> };
    if (parsed.ok) {
      const built = entriesOf(state, parsed.workflow, infoOf);
      placed = placeProblems(check(alias, built.entries).problems, state, built.index);
    }
    const saved = (req.query as Record<string, string | undefined>).saved === '1';
    return editorPage(reply, {
      state,
      warnings,
      placed: placed.placed,
      errors: placed.errors,
      notice: saved ? `Saved ${alias}: it is live.` : undefined,
    });
  });

  app.post<{ Body: FormBody }>('/ui/mapping', async (req, reply) => {
    const state = readState(req.body, comfyNames());
    const action = one(req.body, 'action');
    const parsed = parseWorkflow(state.workflowText);
    if (!parsed.ok) return editorPage(reply, { state, status: 400, refused: action === 'save' });
    const { entries, index } = entriesOf(state, parsed.workflow, infoOf);
    const formErrors = rowProblems(state);
    const table = models();
    if (state.alias === '') formErrors.alias = 'Name the alias: clients send it as "model".';
    else if (state.alias !== state.original && Object.hasOwn(table, state.alias))
      formErrors.alias = `An alias named "${state.alias}" exists already.`;
    if (entries.length === 0) formErrors.backends = 'Tick at least one backend to run this alias on.';
    const checked = entries.length > 0 ? check(state.alias, entries) : { problems: [], candidates: [] };
    const placed = placeProblems(checked.problems, state, index);
    const errors = { ...placed.errors, ...formErrors };

    if (action === 'compile') {
      const used = usedBackends(state).map((i) => state.backends[i].name);
      const backend = used.includes(state.sample.backend) ? state.sample.backend : (used[0] ?? '');
      const request = sampleRequest(state.sample);
      if (!request.ok)
        return editorPage(reply, {
          state,
          status: 400,
          errors: { ...errors, [request.field]: request.message },
          placed: placed.placed,
        });
      const candidate = checked.candidates.find((c) => c.backend === backend);
      const dry: DryRun = candidate
        ? dryRun(
            candidate,
            request.params,
            state.sample.images.filter((p) => p !== ''),
            infoOf(backend),
          )
        : {
            ok: false,
            backend,
            status: 400,
            message: backend
              ? `${backend} cannot run this alias as it stands: see the problems above.`
              : 'Tick a backend first.',
          };
      return editorPage(reply, { state, errors, placed: placed.placed, dry });
    }

    if (action !== 'save') {
      const n = placed.placed.length + Object.keys(formErrors).length;
      return editorPage(reply, {
        state,
        errors,
        placed: placed.placed,
        notice: n === 0 ? 'Checked: no problems. Nothing is saved yet.' : undefined,
      });
    }

    // what no configuration key can say (a row twice, no name, no backend) is the form's; the rest is the service's
    if (Object.keys(formErrors).length > 0)
      return editorPage(reply, { state, status: 400, errors, placed: placed.placed, refused: true });
    const value: Record<string, ImageModelEntry[]> = structuredClone(table);
    if (state.original !== '' && state.original !== state.alias && Object.hasOwn(value, state.original))
      delete value[state.original];
    value[state.alias] = entries;
    const result = services.admin.setSetting('image_models', value);
    if (!result.ok) {
      const warnings = checked.problems.filter((p) => p.severity === 'warning');
      const refused = placeProblems(
        [...result.problems.map((p) => ({ ...p, severity: 'error' as const })), ...warnings],
        state,
        index,
      );
      return editorPage(reply, {
        state,
        status: 400,
        errors: { ...refused.errors },
        placed: refused.placed,
        refused: true,
      });
    }
    return reply.redirect(`/ui/mapping/${encodeURIComponent(state.alias)}?saved=1`, 303);
  });

  app.post<AliasParams>('/ui/mapping/:alias/delete', async (req, reply) => {
    const alias = req.params.alias;
    const table = models();
    if (!Object.hasOwn(table, alias))
      throw Object.assign(new Error(`There is no generation alias "${alias}".`), { statusCode: 404 });
    const value: Record<string, ImageModelEntry[]> = structuredClone(table);
    delete value[alias];
    const result = services.admin.setSetting('image_models', value);
    if (!result.ok)
      return listPage(req, reply, {
        status: 400,
        problem: result.problems.map((p) => `${p.path}: ${p.message}`).join(' '),
      });
    return reply.redirect(`/ui/mapping?saved=deleted&name=${encodeURIComponent(alias)}`, 303);
  });

  app.post('/ui/mapping/reset', async (req, reply) => {
    const result = services.admin.resetSetting('image_models');
    if (!result.ok)
      return listPage(req, reply, { status: 400, problem: result.problems.map((p) => p.message).join(' ') });
    return reply.redirect('/ui/mapping?saved=reset', 303);
  });
}
