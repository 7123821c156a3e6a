/**
 * Admin JSON API for users and IP aliases (under /admin/api/, admin callers only).
 * Responses never carry key material except the `key` of create and rotate, and nothing
 * here logs a request body. Errors go through the app's error handler (OpenAI-shaped, naming
 * the offending field of a bad body).
 */
import { isIP, isIPv6 } from 'node:net';
import { Ajv } from 'ajv';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError, badRequest } from '../errors.ts';
import type { IpAliasesRepo } from '../store/ip-aliases-repo.ts';
import { userNotFound, type NewUser, type User, type UserPatch, type UsersRepo } from '../store/users-repo.ts';

export interface AdminUsersOptions {
  users: UsersRepo;
  ipAliases: IpAliasesRepo;
  /** Throws GatewayError 401/403 unless the request comes from an admin (or the gateway is open). */
  requireAdmin: (req: FastifyRequest) => void;
  /**
   * When given, changes that would leave users but no enabled admin while there is no master
   * key are refused with 409 (nobody could reach the admin API any more).
   */
  hasMasterKey?: () => boolean;
}

const userFields = {
  name: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[^\\u0000-\\u001f\\u007f]+$' },
  role: { type: 'string', enum: ['user', 'admin'] },
  enabled: { type: 'boolean' },
  allow: { type: 'array', maxItems: 1000, items: { type: 'string', minLength: 1, maxLength: 512 } },
  quota_req_day: { type: ['integer', 'null'], minimum: 0 },
  quota_cost_month: { type: ['number', 'null'], minimum: 0 },
  note: { type: 'string', maxLength: 2000 },
} as const;

const pastedKey = { type: 'string', minLength: 16, maxLength: 512, pattern: '^\\S+$' } as const;

const createUserBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { ...userFields, key: pastedKey },
} as const;

const patchUserBody = { type: 'object', additionalProperties: false, properties: userFields } as const;

const rotateBody = { type: 'object', additionalProperties: false, properties: { key: pastedKey } } as const;

const ipAliasesBody = {
  type: 'object',
  additionalProperties: { type: 'string', minLength: 1, maxLength: 64 },
} as const;

/** Registers `/admin/api/users…` and `/admin/api/ip-aliases`; register it without a prefix. */
export async function adminUsersRoutes(app: FastifyInstance, opts: AdminUsersOptions): Promise<void> {
  const { users, ipAliases } = opts;
  const guard = lockoutGuard(opts);

  // Strict validation: no type coercion, no silent removal of unknown fields.
  const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, removeAdditional: false });
  app.setValidatorCompiler(({ schema }) => ajv.compile(schema));
  app.addHook('onRequest', async (req) => opts.requireAdmin(req));

  app.get('/admin/api/users', async () => ({ data: users.list() }));

  app.post<{ Body: NewUser }>('/admin/api/users', { schema: { body: createUserBody } }, async (req, reply) => {
    guard.beforeCreate(req.body);
    const { user, key } = users.create(req.body);
    return reply.code(201).send({ ...user, key });
  });

  app.get<{ Params: { id: string } }>('/admin/api/users/:id', async (req) => {
    const id = parseId(req.params.id);
    return users.get(id) ?? throwNotFound(id);
  });

  app.patch<{ Params: { id: string }; Body: UserPatch }>(
    '/admin/api/users/:id',
    { schema: { body: patchUserBody } },
    async (req) => {
      const id = parseId(req.params.id);
      guard.beforeUpdate(users.get(id) ?? throwNotFound(id), req.body);
      return users.update(id, req.body);
    },
  );

  app.delete<{ Params: { id: string } }>('/admin/api/users/:id', async (req, reply) => {
    const id = parseId(req.params.id);
    guard.beforeDelete(users.get(id) ?? throwNotFound(id));
    users.delete(id);
    return reply.code(204).send();
  });

  app.post<{ Params: { id: string }; Body: { key?: string } }>(
    '/admin/api/users/:id/rotate',
    {
      schema: { body: rotateBody },
      // The body is optional: no body means "generate a key".
      preValidation: async (req) => {
        req.body ??= {};
      },
    },
    async (req) => ({ key: users.rotate(parseId(req.params.id), req.body.key) }),
  );

  app.get('/admin/api/ip-aliases', async () => ipAliases.all());

  app.put<{ Body: Record<string, string> }>('/admin/api/ip-aliases', { schema: { body: ipAliasesBody } }, async (req) => {
    const map: Record<string, string> = {};
    for (const [rawIp, alias] of Object.entries(req.body)) {
      const ip = rawIp.trim();
      if (!isAliasableAddress(ip)) throw badRequest(`'${ip}' is neither an IP address nor an IPv6 /64 prefix.`, ip);
      if (!alias.trim()) throw badRequest(`The alias for '${ip}' is blank.`, ip);
      map[ip] = alias.trim();
    }
    ipAliases.replace(map);
    return ipAliases.all();
  });
}

/** Refuses changes that would leave users but no enabled admin and no master key. */
function lockoutGuard(opts: AdminUsersOptions) {
  const armed = () => opts.hasMasterKey !== undefined && !opts.hasMasterKey();
  const isEnabledAdmin = (u: { role?: string; enabled?: boolean }) => u.role === 'admin' && u.enabled !== false;
  const refuse = (): never => {
    throw new GatewayError({
      status: 409,
      code: 'would_lock_out',
      message:
        'Refused: with no enabled admin user and no master key, nobody could reach the admin API. Create an enabled admin user (or set a master key) first.',
    });
  };
  return {
    beforeCreate(input: NewUser) {
      if (armed() && !isEnabledAdmin({ role: input.role ?? 'user', enabled: input.enabled }) && !opts.users.hasAdmin()) refuse();
    },
    beforeUpdate(current: User, patch: UserPatch) {
      const after = { role: patch.role ?? current.role, enabled: patch.enabled ?? current.enabled };
      if (armed() && isEnabledAdmin(current) && !isEnabledAdmin(after) && opts.users.enabledAdminCount() <= 1) refuse();
    },
    beforeDelete(current: User) {
      const othersRemain = opts.users.count() > 1;
      if (armed() && isEnabledAdmin(current) && othersRemain && opts.users.enabledAdminCount() <= 1) refuse();
    },
  };
}

function isAliasableAddress(ip: string): boolean {
  if (isIP(ip)) return true;
  return ip.endsWith('/64') && isIPv6(ip.slice(0, -3));
}

function parseId(raw: string): number {
  if (!/^\d{1,15}$/.test(raw)) throw userNotFound(raw);
  return Number(raw);
}

function throwNotFound(id: number): never {
  throw userNotFound(id);
}
