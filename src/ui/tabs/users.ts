/**
 * The users tab: users with their role, allow-list and quota usage; create (the key shown
 * once), edit, enable / disable, rotate the key (shown once), delete; and the IP aliases.
 * Every change goes through the users service the JSON admin API uses (same schemas, same
 * lockout guard), so a refused form re-renders with the problem next to its field and
 * nothing saved.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseUserId, type FieldProblem, type User } from '../../admin/users-service.ts';
import { foldIp } from '../../auth/source.ts';
import { GatewayError } from '../../errors.ts';
import type { UiContext } from '../context.ts';
import { renderPage } from '../render.ts';
import { one, ownEntry, type FormBody } from '../form-values.ts';
import { emptyForm, errorsOf, formOf, newUserOf, readUserForm, type UserForm } from './users-form.ts';
import { allowKinds, userRow, usersModel } from './users-model.ts';

/** A refused create never sends a pasted key back to the page: it must be pasted again. */
const PASTE_AGAIN: FieldProblem = { field: 'key', message: 'Paste the key again: it is never sent back to the page.' };

type IdParams = { Params: { id: string }; Body: FormBody };

const NOTICES: Record<string, (name: string) => string> = {
  updated: (n) => `Saved ${n}.`,
  enabled: (n) => `${n} is enabled.`,
  disabled: (n) => `${n} is disabled: its key is refused until it is enabled again.`,
  deleted: (n) => `Deleted ${n}.`,
  'alias-saved': (n) => `Saved the IP alias ${n}.`,
  'alias-removed': (n) => `Removed the IP alias ${n}.`,
};

export async function usersTab(app: FastifyInstance, ctx: UiContext): Promise<void> {
  const { services } = ctx;
  const service = services.users; // the admin API's own instance

  const listPage = (
    req: FastifyRequest,
    reply: FastifyReply,
    extra: {
      status?: number;
      problem?: string;
      ipForm?: { ip: string; alias: string };
      errors?: Record<string, string>;
    } = {},
  ) => {
    const query = req.query as Record<string, string | undefined>;
    const notice = ownEntry(NOTICES, query.saved)?.(query.name ?? '');
    return renderPage(reply, 'users', {
      title: 'Users',
      tab: 'users',
      notice,
      m: usersModel(services, service.list()),
      ipForm: extra.ipForm ?? { ip: '', alias: '' },
      thisAddress: foldIp(req.ip),
      open: services.authenticator.isOpen(),
      ...extra,
    });
  };

  const editPage = (
    reply: FastifyReply,
    data: { user?: User; form: UserForm; errors?: Record<string, string>; status?: number },
  ) => {
    const kinds = allowKinds(services);
    const { user, form } = data;
    return renderPage(reply, 'user-edit', {
      title: user ? `User ${user.name}` : 'New user',
      tab: 'users',
      status: data.status,
      errors: data.errors ?? {},
      form,
      user,
      row: user && userRow(services, user, kinds),
      picker: { groups: kinds.groups, chips: form.allow.map((value) => ({ value, kind: kinds.of(value) })) },
      action: user ? `/ui/users/${user.id}` : '/ui/users',
      needsAdmin: !user && service.firstMustBeAdmin(),
    });
  };

  app.get('/ui/users', async (req, reply) => listPage(req, reply));

  app.get('/ui/users/new', async (_req, reply) => {
    // with no master key the first user must be an admin (the lockout guard): offer that
    return editPage(reply, { form: { ...emptyForm(), role: service.firstMustBeAdmin() ? 'admin' : 'user' } });
  });

  app.post<{ Body: FormBody }>('/ui/users', async (req, reply) => {
    const read = readUserForm(req.body);
    const input = newUserOf(read);
    const problems = [
      ...read.problems,
      ...service.checkCreate(input).filter((p) => !read.problems.some((q) => q.field === p.field)),
    ];
    if (read.key !== undefined && problems.length && !problems.some((p) => p.field === 'key'))
      problems.push(PASTE_AGAIN);
    if (problems.length) return editPage(reply, { form: read.form, errors: errorsOf(problems), status: 400 });
    try {
      const { user, key } = service.create(input);
      return renderPage(reply, 'key-once', {
        title: 'User created',
        tab: 'users',
        userName: user.name,
        key,
        back: '/ui/users',
      });
    } catch (err) {
      const refused = refusal(err);
      const list = [refused.problem];
      if (read.key !== undefined && refused.problem.field !== 'key') list.push(PASTE_AGAIN);
      return editPage(reply, { form: read.form, errors: errorsOf(list), status: refused.status });
    }
  });

  app.get<IdParams>('/ui/users/:id', async (req, reply) => {
    const user = service.get(parseUserId(req.params.id));
    return editPage(reply, { user, form: formOf(user) });
  });

  app.post<IdParams>('/ui/users/:id', async (req, reply) => {
    const user = service.get(parseUserId(req.params.id));
    const read = readUserForm(req.body);
    const problems = [
      ...read.problems,
      ...service.checkPatch(read.body).filter((p) => !read.problems.some((q) => q.field === p.field)),
    ];
    if (problems.length) return editPage(reply, { user, form: read.form, errors: errorsOf(problems), status: 400 });
    try {
      const saved = service.update(user.id, read.body);
      return done(reply, 'updated', saved.name);
    } catch (err) {
      const refused = refusal(err);
      return editPage(reply, { user, form: read.form, errors: errorsOf([refused.problem]), status: refused.status });
    }
  });

  app.post<IdParams>('/ui/users/:id/enabled', async (req, reply) => {
    const user = service.get(parseUserId(req.params.id));
    const enabled = ['on', 'true', '1'].includes(one(req.body, 'enabled'));
    try {
      service.update(user.id, { enabled });
      return done(reply, enabled ? 'enabled' : 'disabled', user.name);
    } catch (err) {
      const refused = refusal(err);
      return listPage(req, reply, { status: refused.status, problem: refused.problem.message });
    }
  });

  app.post<IdParams>('/ui/users/:id/rotate', async (req, reply) => {
    const user = service.get(parseUserId(req.params.id));
    const pasted = one(req.body, 'key').trim() || undefined;
    const problems = service.checkRotate(pasted === undefined ? {} : { key: pasted });
    const refuse = (list: FieldProblem[], status = 400) =>
      editPage(reply, {
        user,
        form: formOf(user),
        errors: errorsOf(list.map((p) => ({ ...p, field: p.field === 'key' ? 'rotate_key' : p.field }))),
        status,
      });
    if (problems.length) return refuse(problems);
    try {
      const key = service.rotate(user.id, pasted);
      return renderPage(reply, 'key-once', {
        title: 'Key rotated',
        tab: 'users',
        userName: user.name,
        key,
        back: `/ui/users/${user.id}`,
      });
    } catch (err) {
      const refused = refusal(err);
      return refuse([refused.problem], refused.status);
    }
  });

  app.post<IdParams>('/ui/users/:id/delete', async (req, reply) => {
    const user = service.get(parseUserId(req.params.id));
    try {
      service.delete(user.id);
      return done(reply, 'deleted', user.name);
    } catch (err) {
      const refused = refusal(err);
      if (one(req.body, 'from') === 'edit')
        return editPage(reply, {
          user,
          form: formOf(user),
          errors: { _form: refused.problem.message },
          status: refused.status,
        });
      return listPage(req, reply, { status: refused.status, problem: refused.problem.message });
    }
  });

  app.post<{ Body: FormBody }>('/ui/users/ip-aliases', async (req, reply) => {
    const ipForm = { ip: one(req.body, 'ip').trim(), alias: one(req.body, 'alias').trim() };
    const problems = service.setIpAlias(ipForm.ip, ipForm.alias);
    if (problems.length) return listPage(req, reply, { status: 400, ipForm, errors: errorsOf(problems) });
    return done(reply, 'alias-saved', `${ipForm.ip} → ${ipForm.alias}`, '#ip-aliases');
  });

  app.post<{ Body: FormBody }>('/ui/users/ip-aliases/delete', async (req, reply) => {
    const ip = one(req.body, 'ip');
    if (!service.removeIpAlias(ip))
      return listPage(req, reply, { status: 404, problem: `There is no IP alias for '${ip}' (any more).` });
    return done(reply, 'alias-removed', ip, '#ip-aliases');
  });
}

/** POST-redirect-GET to the list with a notice. */
function done(reply: FastifyReply, saved: string, name: string, hash = ''): FastifyReply {
  return reply.redirect(`/ui/users?saved=${saved}&name=${encodeURIComponent(name)}${hash}`, 303);
}

/**
 * A change the service refused, as a problem for the form: a taken name or key next to its
 * field, a lockout for the whole form. Anything else (an unknown user, a failure) is thrown on.
 */
function refusal(err: unknown): { status: number; problem: FieldProblem } {
  if (err instanceof GatewayError && (err.status === 400 || err.status === 409)) {
    return {
      status: err.status === 409 && err.code === 'would_lock_out' ? 409 : 400,
      problem: { field: err.param ?? '_form', message: err.message },
    };
  }
  throw err;
}
