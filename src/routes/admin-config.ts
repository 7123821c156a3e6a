/**
 * Admin JSON API for the configuration the store holds (under /admin/api/, admin callers only):
 * settings and backends, through the same ConfigService the /ui console uses. A refused change
 * is a 400 naming every problem at its config key path (nothing written); a change that is
 * accepted is stored and in force when the answer arrives. Secrets never leave: backend
 * api_keys are shown masked, the master key only as set / not set.
 */
import { Ajv } from 'ajv';
import { writeJson } from '../media/compiler/index.ts';
import { registerExactJsonParser } from '../wire/exact-json.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import type { ConfigService, Result } from '../admin/config-service.ts';

export interface AdminConfigOptions {
  config: ConfigService;
  /** Throws GatewayError 401/403 unless the request comes from an admin (or the gateway is open). */
  requireAdmin: (req: FastifyRequest) => void;
}

const settingBody = {
  type: 'object',
  required: ['value'],
  additionalProperties: false,
  properties: { value: {} },
} as const;

const drainBody = {
  type: 'object',
  required: ['on'],
  additionalProperties: false,
  properties: { on: { type: 'boolean' } },
} as const;

const backendBody = { type: 'object' } as const;

/** Settings may carry whole ComfyUI workflows (`image_models`). */
const SETTINGS_BODY_LIMIT = 8 * 1024 * 1024;

type NameParams = { Params: { name: string } };

/** Registers `/admin/api/settings…` and `/admin/api/backends…`; register it without a prefix. */
export async function adminConfigRoutes(app: FastifyInstance, opts: AdminConfigOptions): Promise<void> {
  const { config } = opts;
  const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, removeAdditional: false });
  app.setValidatorCompiler(({ schema }) => ajv.compile(schema));
  app.addHook('onRequest', async (req) => opts.requireAdmin(req));
  // a workflow may carry a seed beyond 2^53: read exactly (a bigint), written back as its digits
  registerExactJsonParser(app);
  app.setReplySerializer((payload) => writeJson(payload));

  app.get('/admin/api/settings', async () => ({ data: config.settingsView() }));

  app.get<{ Params: { key: string } }>('/admin/api/settings/:key', async (req) => {
    return config.settingView(req.params.key) ?? throwUnknownSetting(req.params.key);
  });

  app.put<{ Params: { key: string }; Body: { value: unknown } }>(
    '/admin/api/settings/:key',
    { schema: { body: settingBody }, bodyLimit: SETTINGS_BODY_LIMIT },
    async (req, reply) =>
      answer(reply, config.setSetting(req.params.key, req.body.value), () => config.settingView(req.params.key)),
  );

  app.delete<{ Params: { key: string } }>('/admin/api/settings/:key', async (req, reply) => {
    return answer(reply, config.resetSetting(req.params.key), () => config.settingView(req.params.key));
  });

  app.get('/admin/api/backends', async () => ({ data: config.backendsView() }));

  app.get<NameParams>('/admin/api/backends/:name', async (req) => {
    return config.backendView(req.params.name) ?? throwUnknownBackend(req.params.name);
  });

  // adding: a name already in the fleet is refused
  app.post<{ Body: Record<string, unknown> }>(
    '/admin/api/backends',
    { schema: { body: backendBody } },
    async (req, reply) => {
      const result = config.saveBackend(req.body, { create: true });
      if (result.ok) reply.code(201);
      return answer(reply, result, () => config.backendView(String(req.body.name)));
    },
  );

  // editing (or adding under that name); a different `name` in the body renames
  app.put<NameParams & { Body: Record<string, unknown> }>(
    '/admin/api/backends/:name',
    { schema: { body: backendBody } },
    async (req, reply) => {
      const body = { ...req.body, name: req.body.name ?? req.params.name };
      const known = config.backendView(req.params.name) !== undefined;
      const result = config.saveBackend(body, known ? { replace: req.params.name } : {});
      return answer(reply, result, () => config.backendView(String(body.name)));
    },
  );

  app.delete<NameParams>('/admin/api/backends/:name', async (req, reply) => {
    return answer(reply, config.removeBackend(req.params.name), () => config.backendView(req.params.name));
  });

  app.post<NameParams>('/admin/api/backends/:name/reset', async (req, reply) => {
    return answer(reply, config.resetBackend(req.params.name), () => config.backendView(req.params.name));
  });

  app.post<NameParams & { Body: { on: boolean } }>(
    '/admin/api/backends/:name/drain',
    { schema: { body: drainBody } },
    async (req, reply) => {
      return answer(reply, config.drainBackend(req.params.name, req.body.on), () =>
        config.backendView(req.params.name),
      );
    },
  );

  // discovery dry run; ?replace=<name> uses that backend's stored key when the body's is blank
  app.post<{ Body: Record<string, unknown>; Querystring: { replace?: unknown } }>(
    '/admin/api/backends/test',
    { schema: { body: backendBody } },
    async (req, reply) => {
      const replace = typeof req.query.replace === 'string' && req.query.replace ? req.query.replace : undefined;
      const result = await config.testBackend(req.body, { replace });
      if (!result.ok && result.problems) return sendProblems(reply, result.problems);
      return result;
    },
  );
}

/** 200 with the view after the change (and its note), 404 for an unknown name, 400 with the problems. */
function answer(reply: FastifyReply, result: Result, view: () => unknown) {
  if (result.ok) return { ok: true, ...(result.note ? { note: result.note } : {}), data: view() ?? null };
  if (result.notFound) {
    const message = result.problems[0]?.message ?? 'not found';
    throw new GatewayError({
      status: 404,
      code: 'not_found',
      param: 'name',
      message: message[0].toUpperCase() + message.slice(1) + '.',
    });
  }
  return sendProblems(reply, result.problems);
}

/** The 400 of a refused configuration change: every problem, the first one in `error`. */
export function sendProblems(reply: FastifyReply, problems: readonly { path: string; message: string }[]) {
  const first = problems[0] ?? { path: '', message: 'is not valid' };
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})` : '';
  reply.header('x-request-id', reply.request.id);
  return reply.code(400).send({
    error: {
      message: `${first.path || 'value'}: ${first.message}${more}`,
      type: 'invalid_request_error',
      param: first.path || null,
      code: 'invalid_config',
    },
    problems,
  });
}

function throwUnknownSetting(key: string): never {
  throw new GatewayError({ status: 404, code: 'not_found', param: 'key', message: `No setting named \`${key}\`.` });
}

function throwUnknownBackend(name: string): never {
  throw new GatewayError({ status: 404, code: 'not_found', param: 'name', message: `No backend named \`${name}\`.` });
}
