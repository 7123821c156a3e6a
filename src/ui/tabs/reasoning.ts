/**
 * The reasoning tab: the ordered rule list (the configured `reasoning_rules`, then the built-in
 * defaults, read-only), add / edit / delete / enable / disable, up / down (each a POST), and the
 * resolver: a model on a backend with a switch → the rule that applies and the body the backend
 * would get. Every change is the whole list through `services.admin.setSetting` (config.yaml's
 * validation, stored, live); a change posted from a page that showed another list is refused.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ReasoningRuleSpec } from '../../config/types.ts';
import { DEFAULT_REASONING_RULES } from '../../bridges/reasoning/rules.ts';
import { TransformFactory } from '../../surfaces/call-transform.ts';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';
import { one, ownEntry, type FormBody } from '../form-values.ts';
import {
  emptyRuleForm,
  MECHANISM_INFO,
  MECHANISMS,
  readRuleForm,
  ruleErrorsOf,
  ruleFormOf,
  type FieldErrors,
  type RuleForm,
} from './reasoning-form.ts';
import {
  fingerprint,
  pickerBackends,
  resolve,
  resolverAliases,
  resolverInput,
  ruleRows,
  SWITCHES,
} from './reasoning-model.ts';

const NOTICES: Record<string, (n: string) => string> = {
  added: (n) => `Added rule ${n}: it is in force now.`,
  saved: (n) => `Saved rule ${n}: it is in force now.`,
  moved: (n) => `Moved the rule: it is rule ${n} now.`,
  enabled: (n) => `Rule ${n} is enabled.`,
  disabled: (n) => `Rule ${n} is disabled: it is skipped as if it were not there.`,
  deleted: (n) => `Deleted rule ${n}.`,
  copied: (n) => `Copied the built-in rule: it is rule ${n} now, before every built-in one.`,
  reset: () => "reasoning_rules is back to config.yaml's list (or none): only those and the built-in rules apply.",
};

const RESOLVER_KEYS = ['model', 'backend', 'switch', 'alias'] as const;
const STALE =
  'The rule list changed since this page was shown (another tab, the admin API or ' +
  'config.yaml). Nothing was changed: here is the list as it is now.';

type Query = Record<string, string | undefined>;

export async function reasoningTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const { services } = ctx;
  const transforms = new TransformFactory(() => services.config());
  const rules = () => services.config().reasoning_rules;

  const listPage = (
    req: FastifyRequest,
    reply: FastifyReply,
    extra: { status?: number; problem?: string; query?: Query } = {},
  ) => {
    const query = extra.query ?? (req.query as Query);
    const notice = ownEntry(NOTICES, query.saved)?.(query.n ?? '');
    const input = resolverInput(services, query);
    const result = resolve(services, transforms, input);
    const configured = rules();
    return renderPage(reply, 'reasoning', {
      title: 'Reasoning',
      tab: 'reasoning',
      notice,
      status: extra.status,
      problem: extra.problem,
      rows: ruleRows(services, result.rule?.rule),
      configuredCount: configured.length,
      v: fingerprint(configured),
      source: services.admin.settingView('reasoning_rules'),
      input,
      result,
      switches: SWITCHES,
      backends: pickerBackends(services),
      aliases: resolverAliases(services),
      rq: resolverQuery(query),
    });
  };

  const editPage = (reply: FastifyReply, form: RuleForm, data: { errors?: FieldErrors; status?: number } = {}) => {
    const fleet = pickerBackends(services).map((b) => b.name);
    return renderPage(reply, 'reasoning-edit', {
      title: form.i === '' ? 'New reasoning rule' : `Reasoning rule ${Number(form.i) + 1}`,
      tab: 'reasoning',
      status: data.status,
      errors: data.errors ?? {},
      form,
      isNew: form.i === '',
      count: rules().length,
      fleet,
      mechanisms: MECHANISMS,
      info: MECHANISM_INFO,
    });
  };

  /** A change of the whole list, from a page that showed the list `v`. */
  const change = async (
    req: FastifyRequest<{ Body: FormBody }>,
    reply: FastifyReply,
    edit: (list: ReasoningRuleSpec[]) => { notice: string; n: number } | { problem: string },
  ) => {
    const back = Object.fromEntries(new URLSearchParams(one(req.body, 'rq'))) as Query;
    if (one(req.body, 'v') !== fingerprint(rules()))
      return listPage(req, reply, { status: 409, problem: STALE, query: back });
    const list = structuredClone(rules()) as ReasoningRuleSpec[];
    const outcome = edit(list);
    if ('problem' in outcome) return listPage(req, reply, { status: 400, problem: outcome.problem, query: back });
    const result = services.admin.setSetting('reasoning_rules', list);
    if (!result.ok) {
      const first = result.problems[0];
      return listPage(req, reply, {
        status: 400,
        problem: `The list is refused: ${first.path}: ${first.message}.`,
        query: back,
      });
    }
    return done(reply, outcome.notice, outcome.n, back);
  };

  /** The rule `i` of the posted form, when it is one of the list. */
  const indexOf = (body: FormBody, list: readonly unknown[]): number | undefined => {
    const text = one(body, 'i');
    const i = Number(text);
    return /^\d+$/.test(text) && i < list.length ? i : undefined;
  };
  const gone = { problem: 'That rule is not in the list (any more).' };

  app.get('/ui/reasoning', async (req, reply) => listPage(req, reply));

  app.get('/ui/reasoning/new', async (_req, reply) =>
    editPage(reply, emptyRuleForm(fingerprint(rules()), rules().length)),
  );

  app.get('/ui/reasoning/edit', async (req, reply) => {
    const text = (req.query as Query).i ?? '';
    const i = Number(text);
    if (!/^\d+$/.test(text) || i >= rules().length)
      return listPage(req, reply, {
        status: 404,
        problem: `There is no configured rule ${Number.isFinite(i) ? i + 1 : text}.`,
      });
    return editPage(reply, ruleFormOf(rules()[i], i, fingerprint(rules())));
  });

  app.post<{ Body: FormBody }>('/ui/reasoning/save', async (req, reply) => {
    const read = readRuleForm(req.body);
    const { form } = read;
    const list = structuredClone(rules()) as ReasoningRuleSpec[];
    if (form.v !== fingerprint(rules()))
      return editPage(
        reply,
        { ...form, v: fingerprint(rules()) },
        {
          errors: { _form: STALE.replace(': here is the list as it is now', ': check the list, then save again') },
          status: 409,
        },
      );
    const isNew = form.i === '';
    const at = isNew ? Math.min(Math.max(Number(form.position) || 0, 0), list.length) : Number(form.i);
    if (!isNew && (!/^\d+$/.test(form.i) || at >= list.length))
      return editPage(reply, form, { errors: { _form: gone.problem }, status: 404 });
    if (Object.keys(read.errors).length || !read.rule)
      return editPage(reply, form, { errors: read.errors, status: 400 });
    if (isNew) list.splice(at, 0, read.rule);
    else list[at] = read.rule;
    const result = services.admin.setSetting('reasoning_rules', list);
    if (!result.ok) return editPage(reply, form, { errors: ruleErrorsOf(result.problems, at), status: 400 });
    return done(reply, isNew ? 'added' : 'saved', at, {});
  });

  app.post<{ Body: FormBody }>('/ui/reasoning/move', async (req, reply) =>
    change(req, reply, (list) => {
      const i = indexOf(req.body, list);
      if (i === undefined) return gone;
      const to = one(req.body, 'dir') === 'up' ? i - 1 : i + 1;
      if (to < 0 || to >= list.length) return { problem: `Rule ${i + 1} is ${to < 0 ? 'first' : 'last'} already.` };
      const [rule] = list.splice(i, 1);
      list.splice(to, 0, rule);
      return { notice: 'moved', n: to };
    }),
  );

  app.post<{ Body: FormBody }>('/ui/reasoning/toggle', async (req, reply) =>
    change(req, reply, (list) => {
      const i = indexOf(req.body, list);
      if (i === undefined) return gone;
      const on = list[i].enabled === false;
      if (on) delete list[i].enabled;
      else list[i].enabled = false;
      return { notice: on ? 'enabled' : 'disabled', n: i };
    }),
  );

  app.post<{ Body: FormBody }>('/ui/reasoning/delete', async (req, reply) =>
    change(req, reply, (list) => {
      const i = indexOf(req.body, list);
      if (i === undefined) return gone;
      list.splice(i, 1);
      return { notice: 'deleted', n: i };
    }),
  );

  app.post<{ Body: FormBody }>('/ui/reasoning/copy', async (req, reply) =>
    change(req, reply, (list) => {
      const b = indexOf(req.body, DEFAULT_REASONING_RULES);
      if (b === undefined) return { problem: 'There is no such built-in rule.' };
      list.push(structuredClone(DEFAULT_REASONING_RULES[b]) as ReasoningRuleSpec);
      return { notice: 'copied', n: list.length - 1 };
    }),
  );

  app.post<{ Body: FormBody }>('/ui/reasoning/reset', async (req, reply) => {
    const result = services.admin.resetSetting('reasoning_rules');
    if (!result.ok) return listPage(req, reply, { status: 400, problem: result.problems[0]?.message ?? 'Refused.' });
    return done(reply, 'reset', 0, {});
  });
}

/** The resolver's part of a query, to come back to after a change. */
function resolverQuery(query: Query): string {
  const out = new URLSearchParams();
  for (const k of RESOLVER_KEYS) if (query[k]) out.set(k, query[k]!);
  return out.toString();
}

/** POST-redirect-GET to the list (the resolver as it was) with a notice; `n` is the 0-based rule. */
function done(reply: FastifyReply, saved: string, n: number, back: Query): FastifyReply {
  const rq = resolverQuery(back);
  return reply.redirect(`/ui/reasoning?saved=${saved}&n=${n + 1}${rq ? `&${rq}` : ''}#rules`, 303);
}
