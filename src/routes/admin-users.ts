/**
 * Admin JSON API for users and IP aliases (under /admin/api/, admin callers only).
 * Responses never carry key material except the `key` of create and rotate, and nothing
 * here logs a request body. Errors go through the app's error handler (OpenAI-shaped, naming
 * the offending field of a bad body). The rules (schemas, lockout guard, IP alias checks)
 * live in admin/users-service.ts, shared with the /ui console.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  createUserBody,
  ipAliasesBody,
  parseUserId,
  patchUserBody,
  rotateBody,
  strictAjv,
  UsersService,
  type UsersServiceDeps,
} from '../admin/users-service.ts';
import type { NewUser, UserPatch } from '../store/users-repo.ts';

/** The gateway's one users service (the console uses the same), or what to build one from. */
export type AdminUsersOptions = {
  /** Throws GatewayError 401/403 unless the request comes from an admin (or the gateway is open). */
  requireAdmin: (req: FastifyRequest) => void;
} & ({ service: UsersService } | UsersServiceDeps);

/** Registers `/admin/api/users…` and `/admin/api/ip-aliases`; register it without a prefix. */
export async function adminUsersRoutes(app: FastifyInstance, opts: AdminUsersOptions): Promise<void> {
  const service = 'service' in opts ? opts.service : new UsersService(opts);

  // Strict validation: no type coercion, no silent removal of unknown fields.
  const ajv = strictAjv();
  app.setValidatorCompiler(({ schema }) => ajv.compile(schema));
  app.addHook('onRequest', async (req) => opts.requireAdmin(req));

  app.get('/admin/api/users', async () => ({ data: service.list() }));

  app.post<{ Body: NewUser }>('/admin/api/users', { schema: { body: createUserBody } }, async (req, reply) => {
    const { user, key } = service.create(req.body);
    return reply.code(201).send({ ...user, key });
  });

  app.get<{ Params: { id: string } }>('/admin/api/users/:id', async (req) => service.get(parseUserId(req.params.id)));

  app.patch<{ Params: { id: string }; Body: UserPatch }>(
    '/admin/api/users/:id',
    { schema: { body: patchUserBody } },
    async (req) => service.update(parseUserId(req.params.id), req.body),
  );

  app.delete<{ Params: { id: string } }>('/admin/api/users/:id', async (req, reply) => {
    service.delete(parseUserId(req.params.id));
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
    async (req) => ({ key: service.rotate(parseUserId(req.params.id), req.body.key) }),
  );

  app.get('/admin/api/ip-aliases', async () => service.ipAliases());

  app.put<{ Body: Record<string, string> }>('/admin/api/ip-aliases', { schema: { body: ipAliasesBody } }, async (req) =>
    service.replaceIpAliases(req.body),
  );
}
