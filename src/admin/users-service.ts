/**
 * The one service behind every change to users and IP aliases, used by the JSON admin API
 * (routes/admin-users.ts) and the /ui console alike: the body schemas (strict, no coercion),
 * field-level problems of a refused body, the lockout guard (no change may leave users but
 * no enabled admin while there is no master key) and the IP alias rules. A refused change
 * writes nothing. Nothing here returns key material except the `key` of create and rotate.
 */
import { isIP, isIPv6 } from 'node:net';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { GatewayError, badRequest } from '../errors.ts';
import type { IpAliasesRepo } from '../store/ip-aliases-repo.ts';
import { userNotFound, type NewUser, type User, type UserPatch, type UsersRepo } from '../store/users-repo.ts';

export { DEFAULT_USER_SHARE, type NewUser, type Role, type User, type UserPatch } from '../store/users-repo.ts';

export const USER_NAME_MAX = 64;
export const IP_ALIAS_MAX = 64;
/** The largest fair-share weight a user may have (a million times another's is no share at all). */
export const USER_SHARE_MAX = 1000;
/** The largest `max_inflight` (beyond any fleet's slots: a cap that never bites). */
export const USER_MAX_INFLIGHT_MAX = 100_000;

const userFields = {
  name: { type: 'string', minLength: 1, maxLength: USER_NAME_MAX, pattern: '^[^\\u0000-\\u001f\\u007f]+$' },
  role: { type: 'string', enum: ['user', 'admin'] },
  enabled: { type: 'boolean' },
  allow: { type: 'array', maxItems: 1000, items: { type: 'string', minLength: 1, maxLength: 512 } },
  quota_req_day: { type: ['integer', 'null'], minimum: 0 },
  quota_cost_month: { type: ['number', 'null'], minimum: 0 },
  share: { type: 'number', exclusiveMinimum: 0, maximum: USER_SHARE_MAX },
  max_inflight: { type: ['integer', 'null'], minimum: 0, maximum: USER_MAX_INFLIGHT_MAX },
  note: { type: 'string', maxLength: 2000 },
} as const;

const pastedKey = { type: 'string', minLength: 16, maxLength: 512, pattern: '^\\S+$' } as const;

export const createUserBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { ...userFields, key: pastedKey },
} as const;

export const patchUserBody = { type: 'object', additionalProperties: false, properties: userFields } as const;

export const rotateBody = { type: 'object', additionalProperties: false, properties: { key: pastedKey } } as const;

export const ipAliasesBody = {
  type: 'object',
  additionalProperties: { type: 'string', minLength: 1, maxLength: IP_ALIAS_MAX },
} as const;

/** One problem of a refused body, by field (`_form` when it is about the whole change). */
export interface FieldProblem {
  field: string;
  message: string;
}

export interface UsersServiceDeps {
  users: UsersRepo;
  ipAliases: IpAliasesRepo;
  /**
   * When given, changes that would leave users but no enabled admin while there is no master
   * key are refused with 409 (nobody could reach the admin API any more).
   */
  hasMasterKey?: () => boolean;
}

/** An ajv for the schemas above: strict, no coercion, no defaults, nothing removed. */
export function strictAjv(allErrors = false): Ajv {
  return new Ajv({ allErrors, coerceTypes: false, useDefaults: false, removeAdditional: false });
}

// every problem at once, for a form showing each next to its field
const checkers = (() => {
  const ajv = strictAjv(true);
  return { create: ajv.compile(createUserBody), patch: ajv.compile(patchUserBody), rotate: ajv.compile(rotateBody) };
})();

export class UsersService {
  readonly users: UsersRepo;
  readonly ipAliasesRepo: IpAliasesRepo;
  private readonly guard: ReturnType<typeof lockoutGuard>;

  constructor(deps: UsersServiceDeps) {
    this.users = deps.users;
    this.ipAliasesRepo = deps.ipAliases;
    this.guard = lockoutGuard(deps);
  }

  private readonly changeListeners = new Set<() => void>();

  /** Calls `fn` after each change written to the store (cluster mode pushes it to the others). */
  onChange(fn: () => void): () => void {
    this.changeListeners.add(fn);
    return () => this.changeListeners.delete(fn);
  }

  private changed<T>(result: T): T {
    for (const fn of this.changeListeners) fn();
    return result;
  }

  /** The lockout guard's rule, for forms that offer the admin role first. */
  firstMustBeAdmin(): boolean {
    return this.guard.firstMustBeAdmin();
  }

  list(): User[] {
    return this.users.list();
  }

  /** The user, or a 404. */
  get(id: number): User {
    return this.users.get(id) ?? throwNotFound(id);
  }

  /** Every problem of a create body; empty when it is valid. */
  checkCreate(body: unknown): FieldProblem[] {
    return problemsOf(checkers.create, body);
  }

  /** Every problem of a patch body; empty when it is valid. */
  checkPatch(body: unknown): FieldProblem[] {
    return problemsOf(checkers.patch, body);
  }

  checkRotate(body: unknown): FieldProblem[] {
    return problemsOf(checkers.rotate, body);
  }

  /** Creates a user (its key shown this once); 400 for a bad body, 409 for a taken name or a lockout. */
  create(input: NewUser): { user: User; key: string } {
    refuseProblems(this.checkCreate(input));
    this.guard.beforeCreate(input);
    return this.changed(this.users.create(input));
  }

  /** 404 for an unknown id, 400 for a bad patch, 409 for a taken name or a lockout. */
  update(id: number, patch: UserPatch): User {
    const current = this.get(id);
    refuseProblems(this.checkPatch(patch));
    this.guard.beforeUpdate(current, patch);
    return this.changed(this.users.update(id, patch));
  }

  delete(id: number): void {
    this.guard.beforeDelete(this.get(id));
    this.changed(this.users.delete(id));
  }

  /** Replaces the user's key (generated unless pasted); the old one stops working at once. */
  rotate(id: number, key?: string): string {
    this.get(id);
    refuseProblems(this.checkRotate(key === undefined ? {} : { key }));
    return this.changed(this.users.rotate(id, key));
  }

  /**
   * The keyed digest under which `key` is stored (an HMAC: the key cannot be read back from
   * it). A console session keeps it to notice a rotated key (`currentHolder`).
   */
  digestOf(key: string): string {
    return this.users.digestOf(key);
  }

  /** User `id` as it is now, if `digest` (from `digestOf`) is still its key; undefined once rotated or deleted. */
  currentHolder(id: number, digest: string): User | undefined {
    return this.users.currentHolder(id, digest);
  }

  ipAliases(): Record<string, string> {
    return this.ipAliasesRepo.all();
  }

  /** Replaces the whole map; a bad address or a blank alias refuses all of it (400 naming the address). */
  replaceIpAliases(body: Record<string, string>): Record<string, string> {
    const map: Record<string, string> = {};
    for (const [rawIp, alias] of Object.entries(body)) {
      const problem = ipAliasProblems(rawIp, alias)[0];
      if (problem) throw badRequest(problem.message, rawIp.trim());
      map[rawIp.trim()] = alias.trim();
    }
    this.changed(this.ipAliasesRepo.replace(map));
    return this.ipAliasesRepo.all();
  }

  /** Adds or renames one alias; the problems, by field (`ip`, `alias`), when refused. */
  setIpAlias(ip: string, alias: string): FieldProblem[] {
    const problems = ipAliasProblems(ip, alias);
    if (problems.length === 0) this.replaceIpAliases({ ...this.ipAliases(), [ip.trim()]: alias.trim() });
    return problems;
  }

  /** Removes one alias; false when there was none for `ip`. */
  removeIpAlias(ip: string): boolean {
    const map = this.ipAliases();
    if (!(ip in map)) return false;
    delete map[ip];
    this.changed(this.ipAliasesRepo.replace(map));
    return true;
  }
}

/** The IP alias rules: an IP address or an IPv6 /64 prefix, and a non-blank name of at most 64 characters. */
export function ipAliasProblems(rawIp: string, alias: unknown): FieldProblem[] {
  const ip = rawIp.trim();
  const problems: FieldProblem[] = [];
  if (!isAliasableAddress(ip)) {
    problems.push({
      field: 'ip',
      message: ip
        ? `'${ip}' is neither an IP address nor an IPv6 /64 prefix.`
        : 'Enter an IP address or an IPv6 /64 prefix.',
    });
  }
  if (typeof alias !== 'string' || !alias.trim())
    problems.push({ field: 'alias', message: ip ? `The alias for '${ip}' is blank.` : 'Enter a name.' });
  else if (alias.trim().length > IP_ALIAS_MAX)
    problems.push({ field: 'alias', message: `At most ${IP_ALIAS_MAX} characters.` });
  return problems;
}

export function isAliasableAddress(ip: string): boolean {
  if (isIP(ip)) return true;
  return ip.endsWith('/64') && isIPv6(ip.slice(0, -3));
}

/** A user id from a path segment, or a 404. */
export function parseUserId(raw: string): number {
  if (!/^\d{1,15}$/.test(raw)) throw userNotFound(raw);
  return Number(raw);
}

/** Refuses changes that would leave users but no enabled admin and no master key. */
function lockoutGuard(deps: UsersServiceDeps) {
  const armed = () => deps.hasMasterKey !== undefined && !deps.hasMasterKey();
  const isEnabledAdmin = (u: { role?: string; enabled?: boolean }) => u.role === 'admin' && u.enabled !== false;
  const refuse = (): never => {
    throw new GatewayError({
      status: 409,
      code: 'would_lock_out',
      message:
        'Refused: with no enabled admin user and no master key, nobody could reach the admin API. ' +
        'Create an enabled admin user (or set a master key) first.',
    });
  };
  return {
    /** With no master key and no enabled admin yet, the next user must be an admin. */
    firstMustBeAdmin: () => armed() && !deps.users.hasAdmin(),
    beforeCreate(input: NewUser) {
      if (armed() && !isEnabledAdmin({ role: input.role ?? 'user', enabled: input.enabled }) && !deps.users.hasAdmin())
        refuse();
    },
    beforeUpdate(current: User, patch: UserPatch) {
      const after = { role: patch.role ?? current.role, enabled: patch.enabled ?? current.enabled };
      if (armed() && isEnabledAdmin(current) && !isEnabledAdmin(after) && deps.users.enabledAdminCount() <= 1) refuse();
    },
    beforeDelete(current: User) {
      const othersRemain = deps.users.count() > 1;
      if (armed() && isEnabledAdmin(current) && othersRemain && deps.users.enabledAdminCount() <= 1) refuse();
    },
  };
}

/** What a form shows next to each field: one problem per field, in plain words. */
function problemsOf(validate: ValidateFunction, body: unknown): FieldProblem[] {
  if (validate(body)) return [];
  const seen = new Map<string, string>();
  for (const e of validate.errors ?? []) {
    const p = describe(e);
    if (!seen.has(p.field)) seen.set(p.field, p.message);
  }
  return [...seen].map(([field, message]) => ({ field, message }));
}

function describe(e: ErrorObject): FieldProblem {
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required') return { field: String(params.missingProperty), message: 'Required.' };
  if (e.keyword === 'additionalProperties')
    return { field: '_form', message: `Unknown field '${String(params.additionalProperty)}'.` };
  const [field = '_form', index] = e.instancePath.split('/').slice(1);
  const limit = params.limit as number | undefined;
  const words: Record<string, string | undefined> = {
    'name:minLength': 'Enter a name.',
    'name:maxLength': `At most ${limit} characters.`,
    'name:pattern': 'No control characters (tabs, line breaks).',
    'role:enum': 'Choose user or admin.',
    'enabled:type': 'Must be on or off.',
    'allow:maxItems': `At most ${limit} entries.`,
    'allow:minLength': `Entry ${Number(index) + 1} is empty.`,
    'allow:maxLength': `Entry ${Number(index) + 1} is longer than ${limit} characters.`,
    'quota_req_day:type': 'A whole number of requests, or blank for no limit.',
    'quota_req_day:minimum': 'Must be 0 or more (blank or 0: no limit).',
    'quota_cost_month:type': 'An amount in USD, or blank for no limit.',
    'quota_cost_month:minimum': 'Must be 0 or more (blank or 0: no limit).',
    'share:type': 'A number above 0, like 1, 2 or 0.5.',
    'share:exclusiveMinimum': 'Must be above 0 (1 is an equal share).',
    'share:maximum': `At most ${limit}.`,
    'max_inflight:type': 'A whole number of calls, or blank for no cap.',
    'max_inflight:minimum': 'Must be 0 or more (blank or 0: no cap).',
    'max_inflight:maximum': `At most ${limit}.`,
    'note:maxLength': `At most ${limit} characters.`,
    'key:minLength': `At least ${limit} characters.`,
    'key:maxLength': `At most ${limit} characters.`,
    'key:pattern': 'No spaces or line breaks.',
  };
  return { field, message: words[`${field}:${e.keyword}`] ?? `Invalid: ${e.message ?? 'invalid value'}.` };
}

function refuseProblems(problems: FieldProblem[]): void {
  const first = problems[0];
  if (first)
    throw badRequest(
      first.field === '_form' ? first.message : `Invalid '${first.field}': ${first.message}`,
      first.field === '_form' ? null : first.field,
    );
}

function throwNotFound(id: number): never {
  throw userNotFound(id);
}
