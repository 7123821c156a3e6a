/**
 * Users of the gateway and their keys. A key is stored twice, never in clear: encrypted
 * (AES-256-GCM, for a future "reveal") and as an HMAC digest (indexed, for O(1) lookup).
 * Nothing this repository returns carries key material except `create`/`rotate`'s `key`.
 */
import { GatewayError, badRequest } from '../errors.ts';
import { MIN_PASTED_KEY_LENGTH, generateKey, keyHint } from './keys.ts';
import type { Db } from './db.ts';
import type { SecretBox } from './secret-box.ts';

export type Role = 'user' | 'admin';

export interface User {
  id: number;
  name: string;
  role: Role;
  enabled: boolean;
  /** Safe-to-show tail of the key, like `sk-…wxyz`. */
  key_hint: string;
  /** Chat/generation aliases, backend names or model ids; empty = everything. */
  allow: string[];
  quota_req_day: number | null;
  /** USD per calendar month. */
  quota_cost_month: number | null;
  /** Fair-share weight (> 0, default 1): a user of share 2 gets twice the service of one of share 1. */
  share: number;
  /** Calls at once; more park (never refused). null or 0: no cap. */
  max_inflight: number | null;
  note: string;
  created_at: number;
  updated_at: number;
}

export interface NewUser {
  name: string;
  role?: Role;
  enabled?: boolean;
  allow?: string[];
  quota_req_day?: number | null;
  quota_cost_month?: number | null;
  share?: number;
  max_inflight?: number | null;
  note?: string;
  /** A pasted key (≥ 16 chars); generated when absent. */
  key?: string;
}

export type UserPatch = Partial<Omit<NewUser, 'key'>>;

interface UserRow {
  id: number;
  name: string;
  role: Role;
  enabled: number;
  key_hint: string;
  allow: string;
  quota_req_day: number | null;
  quota_cost_month: number | null;
  share: number;
  max_inflight: number | null;
  note: string;
  created_at: number;
  updated_at: number;
}

/** Fair-share weight of a user created without one. */
export const DEFAULT_USER_SHARE = 1;

const PUBLIC_COLUMNS =
  'id, name, role, enabled, key_hint, allow, quota_req_day, quota_cost_month, share, ' +
  'max_inflight, note, created_at, updated_at';

type Statements = ReturnType<typeof prepareStatements>;

function prepareStatements(db: Db) {
  return {
    list: db.prepare<[], UserRow>(`SELECT ${PUBLIC_COLUMNS} FROM users ORDER BY id`),
    get: db.prepare<[number], UserRow>(`SELECT ${PUBLIC_COLUMNS} FROM users WHERE id = ?`),
    byDigest: db.prepare<[string], UserRow>(`SELECT ${PUBLIC_COLUMNS} FROM users WHERE key_digest = ?`),
    insert: db.prepare(
      `INSERT INTO users (name, role, enabled, key_digest, key_cipher, key_hint, allow,
                          quota_req_day, quota_cost_month, share, max_inflight, note, created_at, updated_at)
       VALUES (@name, @role, @enabled, @key_digest, @key_cipher, @key_hint, @allow,
               @quota_req_day, @quota_cost_month, @share, @max_inflight, @note, @now, @now)`,
    ),
    update: db.prepare(
      `UPDATE users SET name = @name, role = @role, enabled = @enabled, allow = @allow,
              quota_req_day = @quota_req_day, quota_cost_month = @quota_cost_month, share = @share,
              max_inflight = @max_inflight, note = @note, updated_at = @now
       WHERE id = @id`,
    ),
    setKey: db.prepare(
      `UPDATE users SET key_digest = @key_digest, key_cipher = @key_cipher, key_hint = @key_hint,
              updated_at = @now
       WHERE id = @id`,
    ),
    delete: db.prepare<[number]>('DELETE FROM users WHERE id = ?'),
    count: db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM users'),
    enabledAdmins: db.prepare<[], { n: number }>(
      "SELECT COUNT(*) AS n FROM users WHERE role = 'admin' AND enabled = 1",
    ),
  };
}

export class UsersRepo {
  private readonly box: SecretBox;
  private readonly sql: Statements;
  private readonly byDigest = new Map<string, User>();
  private userCount?: number;
  private writes = 0;

  constructor(db: Db, box: SecretBox) {
    this.box = box;
    this.sql = prepareStatements(db);
  }

  /** Counts the writes through this repository: an answer read from it holds while this is unchanged. */
  generation(): number {
    return this.writes;
  }

  /** Every user, oldest first, without key material. */
  list(): User[] {
    return this.sql.list.all().map(toUser);
  }

  get(id: number): User | undefined {
    const row = this.sql.get.get(id);
    return row && toUser(row);
  }

  /**
   * The user owning `key` (enabled or not), by its keyed digest. Found users are remembered
   * until the next write through this repository (every write goes through it), so the
   * request path does no SQLite read for a known key.
   */
  findByKey(key: string): User | undefined {
    return this.holderOf(this.box.digest(key));
  }

  /**
   * The keyed digest under which `key` is stored (an HMAC: the key cannot be read back from
   * it). A console session keeps it to notice a rotated key (`isCurrentDigest`).
   */
  digestOf(key: string): string {
    return this.box.digest(key);
  }

  /**
   * Whether `digest` (from `digestOf`) is the current key of user `id`: false once the key is
   * rotated or the user deleted. Served from the same cache as `findByKey`.
   */
  isCurrentDigest(id: number, digest: string): boolean {
    return this.currentHolder(id, digest) !== undefined;
  }

  /** User `id` as it is now, if `digest` is still its key (cached: no read per call). */
  currentHolder(id: number, digest: string): User | undefined {
    const user = this.holderOf(digest);
    return user?.id === id ? user : undefined;
  }

  private holderOf(digest: string): User | undefined {
    const known = this.byDigest.get(digest);
    if (known) return known;
    const row = this.sql.byDigest.get(digest);
    if (!row) return undefined;
    const user = toUser(row);
    this.byDigest.set(digest, user);
    return user;
  }

  /** Creates a user; the returned `key` is the only time it is ever available in clear. */
  create(input: NewUser): { user: User; key: string } {
    const key = input.key ?? generateKey();
    checkPastedKey(key);
    const now = Date.now();
    const info = this.uniquely(() =>
      this.sql.insert.run({
        name: checkName(input.name),
        role: input.role ?? 'user',
        enabled: input.enabled === false ? 0 : 1,
        ...this.sealKey(key),
        allow: JSON.stringify(input.allow ?? []),
        quota_req_day: input.quota_req_day ?? null,
        quota_cost_month: input.quota_cost_month ?? null,
        share: input.share ?? DEFAULT_USER_SHARE,
        max_inflight: input.max_inflight ?? null,
        note: input.note ?? '',
        now,
      }),
    );
    this.invalidate();
    return { user: this.get(Number(info.lastInsertRowid))!, key };
  }

  /** Applies a partial change; throws 404 for an unknown id, 409 for a taken name. */
  update(id: number, patch: UserPatch): User {
    const current = this.require(id);
    const next = { ...current, ...definedOnly(patch) };
    this.uniquely(() =>
      this.sql.update.run({
        id,
        name: checkName(next.name),
        role: next.role,
        enabled: next.enabled ? 1 : 0,
        allow: JSON.stringify(next.allow),
        quota_req_day: next.quota_req_day,
        quota_cost_month: next.quota_cost_month,
        share: next.share,
        max_inflight: next.max_inflight,
        note: next.note,
        now: Date.now(),
      }),
    );
    this.invalidate();
    return this.get(id)!;
  }

  /** Throws 404 for an unknown id. */
  delete(id: number): void {
    const deleted = this.sql.delete.run(id).changes;
    this.invalidate();
    if (deleted === 0) throw userNotFound(id);
  }

  /** Replaces a user's key (generated unless one is pasted); the old key stops working at once. */
  rotate(id: number, pastedKey?: string): string {
    this.require(id);
    const key = pastedKey ?? generateKey();
    checkPastedKey(key);
    this.uniquely(() => this.sql.setKey.run({ id, ...this.sealKey(key), now: Date.now() }));
    this.invalidate();
    return key;
  }

  count(): number {
    this.userCount ??= this.sql.count.get()!.n;
    return this.userCount;
  }

  /** Forgets what the read caches hold; called after every write, and after a cluster import changed the table. */
  invalidate(): void {
    this.writes++;
    this.byDigest.clear();
    this.userCount = undefined;
  }

  /** Whether an enabled admin exists. */
  hasAdmin(): boolean {
    return this.enabledAdminCount() > 0;
  }

  enabledAdminCount(): number {
    return this.sql.enabledAdmins.get()!.n;
  }

  private require(id: number): User {
    const user = this.get(id);
    if (!user) throw userNotFound(id);
    return user;
  }

  private sealKey(key: string) {
    return { key_digest: this.box.digest(key), key_cipher: this.box.encrypt(key), key_hint: keyHint(key) };
  }

  /** Runs a write, turning UNIQUE violations into 409s that never echo a key. */
  private uniquely<T>(write: () => T): T {
    try {
      return write();
    } catch (err) {
      const code = (err as { code?: string }).code;
      const message = String((err as Error).message);
      if (code === 'SQLITE_CONSTRAINT_UNIQUE' && message.includes('users.name')) {
        throw new GatewayError({
          status: 409,
          code: 'user_exists',
          param: 'name',
          message: 'A user with this name already exists.',
        });
      }
      if (code === 'SQLITE_CONSTRAINT_UNIQUE' && message.includes('users.key_digest')) {
        throw new GatewayError({
          status: 409,
          code: 'key_in_use',
          param: 'key',
          message: 'This key is already in use by another user.',
        });
      }
      throw err;
    }
  }
}

export function userNotFound(id: number | string): GatewayError {
  return new GatewayError({ status: 404, code: 'user_not_found', param: 'id', message: `No user with id ${id}.` });
}

function toUser(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    enabled: row.enabled === 1,
    key_hint: row.key_hint,
    allow: JSON.parse(row.allow) as string[],
    quota_req_day: row.quota_req_day,
    quota_cost_month: row.quota_cost_month,
    share: row.share,
    max_inflight: row.max_inflight,
    note: row.note,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function checkName(name: string): string {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (!trimmed) throw badRequest('A user needs a non-empty name.', 'name');
  return trimmed;
}

function checkPastedKey(key: string): void {
  if (typeof key !== 'string' || key.length < MIN_PASTED_KEY_LENGTH || /\s/.test(key)) {
    throw badRequest(`A key must be at least ${MIN_PASTED_KEY_LENGTH} characters without whitespace.`, 'key');
  }
}

function definedOnly<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}
