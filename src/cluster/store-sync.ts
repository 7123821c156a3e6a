/**
 * What the console and the admin API edit (users and their keys, stored backends, settings, IP
 * aliases), the same on every instance of a cluster. Redis holds one versioned snapshot per
 * table (`llmgw:store:versions` table → version, `llmgw:store:table:<table>` the rows sealed
 * with the SecretBox); each instance's SQLite is the cache the request path reads.
 *
 * - A local edit commits to SQLite as always; the service's change callback then pushes the
 *   table with a compare-and-set on the version it was last in step with (one Lua script), and
 *   publishes `{table, version}` on `llmgw:store`.
 * - A push that finds a newer version merges by primary key (store-merge.ts: the other
 *   instance's rows, this instance's own changes on top), imports that and pushes again.
 * - The others import a newer snapshot on the message, or on the re-check every second that
 *   covers a lost one, in one transaction per table, then run what a local edit runs.
 * - At boot Redis wins where it holds a snapshot; a table it lacks (first instance, or a Redis
 *   that came back empty) is seeded from this instance's SQLite.
 *
 * Every instance must share one `secret.key` (key digests and ciphertexts are made with it):
 * a fingerprint in Redis (an HMAC of a constant, never the secret) refuses a different one.
 */
import type { Logger } from 'pino';
import type { ClusterNode } from './node.ts';
import type { SecretBox } from '../store/secret-box.ts';
import { SYNCED_TABLES, type SyncedTable, type TableSnapshot, type TableSnapshots } from '../store/table-snapshot.ts';
import { mergeTable, sameRows } from './store-merge.ts';

export const STORE_CHANNEL = 'store';
const RECHECK_MS = 1000;
const MAX_ATTEMPTS = 8;
const TABLES = Object.keys(SYNCED_TABLES) as SyncedTable[];
/** What the fingerprint digests: whitespace inside, so it is never a user key's digest. */
const FINGERPRINT_TEXT = 'llm-gateway cluster store: same secret.key';

/**
 * KEYS: versions hash, table key, secret fingerprint. ARGV: table, expected version, sealed payload,
 * fingerprint. A Redis that came back empty gets the fingerprint again with the first push.
 */
const PUSH_SCRIPT = `
local seal = redis.call('GET', KEYS[3])
if seal and seal ~= ARGV[4] then return {-1, 0} end
if not seal then redis.call('SET', KEYS[3], ARGV[4]) end
local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if current ~= tonumber(ARGV[2]) then return {0, current} end
redis.call('HSET', KEYS[1], ARGV[1], current + 1)
redis.call('SET', KEYS[2], ARGV[3])
return {1, current + 1}`;

export class ClusterSecretMismatchError extends Error {
  constructor(storeDir: string) {
    super(
      `cluster: ${storeDir}/secret.key differs from the one the other instances use; every instance of a cluster ` +
        'needs the same secret.key (copy it from a running instance while this one is stopped)',
    );
    this.name = 'ClusterSecretMismatchError';
  }
}

export interface StoreSyncDeps {
  node: ClusterNode;
  snapshots: TableSnapshots;
  box: SecretBox;
  storeDir: string;
  /** Writes a snapshot into SQLite (in one transaction). */
  importTable: (table: SyncedTable, snapshot: TableSnapshot) => void;
  /** After imports: what a local edit of these tables sets in motion. */
  react: (tables: ReadonlySet<SyncedTable>) => void;
  log: Pick<Logger, 'warn' | 'info'>;
}

interface Remote {
  version: number;
  snapshot?: TableSnapshot;
}

export class StoreSync {
  /** Per table: the cluster's snapshot this instance was last in step with. */
  private readonly base = new Map<SyncedTable, { version: number; snapshot: TableSnapshot }>();
  private running?: Promise<void>;
  private again = false;
  private dirty = false;
  private closed = false;
  private timer?: NodeJS.Timeout;
  private unsubscribe?: () => void;

  constructor(private readonly deps: StoreSyncDeps) {}

  /** Checks the secret, then imports (or seeds) every table; throws when Redis fails at boot. */
  async start(): Promise<void> {
    await this.checkSecret();
    for (const table of TABLES) this.base.set(table, { version: 0, snapshot: this.deps.snapshots.read(table) });
    await this.syncAll();
    // from here on (a message meanwhile is caught by the re-check)
    this.unsubscribe = this.deps.node.subscribe(STORE_CHANNEL, (message) => this.onMessage(message));
    this.timer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.timer.unref();
  }

  /** A local edit was committed: push it (coalesced; a failure is retried by the re-check). */
  changed(): void {
    this.dirty = true;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain().finally(() => (this.running = undefined));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.unsubscribe?.();
    await this.running;
  }

  private async drain(): Promise<void> {
    do {
      this.again = false;
      this.dirty = false;
      try {
        await this.syncAll();
      } catch (err) {
        this.dirty = true;
        if (!this.closed) this.deps.log.warn(`cluster store sync: ${(err as Error).message}; retrying`);
      }
    } while (this.again && !this.closed);
  }

  private onMessage(message: string): void {
    let note: { table?: string; version?: number; from?: string };
    try {
      note = JSON.parse(message) as typeof note;
    } catch {
      return;
    }
    if (note.from === this.deps.node.instanceId || !this.base.has(note.table as SyncedTable)) return;
    if (this.base.get(note.table as SyncedTable)!.version !== note.version) this.changed();
  }

  /** Every second: a lost message, a failed push, or a Redis that came back empty. */
  private async recheck(): Promise<void> {
    if (this.closed || this.running || !this.deps.node.connected) return;
    if (this.dirty) return this.changed();
    try {
      const versions = await this.deps.node.redis.hgetall(this.versionsKey);
      if (TABLES.some((t) => Number(versions[t] ?? 0) !== this.base.get(t)!.version)) this.changed();
    } catch {
      // the next re-check tries again
    }
  }

  private async syncAll(): Promise<void> {
    const imported = new Set<SyncedTable>();
    try {
      for (const table of TABLES) if (!this.closed) await this.syncTable(table, imported);
    } finally {
      if (imported.size > 0 && !this.closed) this.deps.react(imported);
    }
  }

  /** Brings one table in step: import what the cluster has newer, push what this instance has newer. */
  private async syncTable(table: SyncedTable, imported: Set<SyncedTable>): Promise<void> {
    const columns = this.deps.snapshots.columnsOf(table);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const remote = await this.readRemote(table);
      if (this.closed) return;
      // nothing awaits from here to the import: a local edit cannot slip in between
      let local = this.deps.snapshots.read(table);
      const base = this.base.get(table)!;
      if (remote.snapshot && remote.version !== base.version) {
        const next = sameRows(local.rows, base.snapshot.rows, table, columns)
          ? remote.snapshot
          : this.merged(table, columns, base.snapshot, local, remote.snapshot);
        if (!sameRows(next.rows, local.rows, table, columns) || (next.seq ?? 0) > (local.seq ?? 0)) {
          this.importOrTheirs(table, next, remote.snapshot);
          imported.add(table);
          local = this.deps.snapshots.read(table);
        }
        this.base.set(table, { version: remote.version, snapshot: remote.snapshot });
      }
      const inStep = this.base.get(table)!.snapshot;
      const same = sameRows(local.rows, inStep.rows, table, columns) && (local.seq ?? 0) === (inStep.seq ?? 0);
      if (remote.snapshot && same) return;
      const version = await this.push(table, remote.version, local);
      if (version !== undefined) {
        this.base.set(table, { version, snapshot: local });
        const note = JSON.stringify({ table, version, from: this.deps.node.instanceId });
        this.deps.node.publish(STORE_CHANNEL, note);
        return;
      }
      // another instance pushed first: the next turn merges with its snapshot
    }
    throw new Error(`table ${table}: still racing other instances after ${MAX_ATTEMPTS} attempts`);
  }

  /** Imports `next`; a merge SQLite refuses (a constraint) gives way to the cluster's own snapshot. */
  private importOrTheirs(table: SyncedTable, next: TableSnapshot, theirs: TableSnapshot): void {
    try {
      this.deps.importTable(table, next);
    } catch (err) {
      if (next === theirs) throw err;
      this.deps.log.warn(
        `cluster store sync: ${table}: this instance's changes could not be merged with another's ` +
          `(${(err as Error).message}); the other instance's table is kept`,
      );
      this.deps.importTable(table, theirs);
    }
  }

  private merged(
    table: SyncedTable,
    columns: readonly string[],
    base: TableSnapshot,
    local: TableSnapshot,
    remote: TableSnapshot,
  ): TableSnapshot {
    const result = mergeTable(table, columns, base, local, remote);
    for (const key of result.dropped) {
      this.deps.log.warn(
        `cluster store sync: ${table} ${key} was changed here and on another instance at once with a clashing ` +
          `unique value; the other instance's change is kept, this one's is dropped`,
      );
    }
    for (const [from, to] of result.renumbered) {
      this.deps.log.warn(
        `cluster store sync: ${table} ${from} was also created on another instance; this one is ${to}`,
      );
    }
    return result.snapshot;
  }

  private async readRemote(table: SyncedTable): Promise<Remote> {
    const answers = await this.deps.node.redis.multi().hget(this.versionsKey, table).get(this.tableKey(table)).exec();
    if (!answers) throw new Error('Redis transaction aborted');
    for (const [err] of answers) if (err) throw err;
    const version = Number(answers[0]![1] ?? 0);
    const sealed = answers[1]![1] as string | null;
    if (version === 0 || sealed === null) return { version };
    return { version, snapshot: JSON.parse(this.deps.box.decrypt(sealed)) as TableSnapshot };
  }

  /** The new version, or undefined when the cluster's is no longer `expected`. */
  private async push(table: SyncedTable, expected: number, snapshot: TableSnapshot): Promise<number | undefined> {
    const sealed = this.deps.box.encrypt(JSON.stringify(snapshot));
    const keys = [this.versionsKey, this.tableKey(table), this.fingerprintKey];
    const args = [table, String(expected), sealed, this.fingerprint];
    const [ok, version] = (await this.deps.node.redis.eval(PUSH_SCRIPT, 3, ...keys, ...args)) as [number, number];
    if (ok === -1) throw new ClusterSecretMismatchError(this.deps.storeDir);
    return ok === 1 ? version : undefined;
  }

  private async checkSecret(): Promise<void> {
    const redis = this.deps.node.redis;
    await redis.set(this.fingerprintKey, this.fingerprint, 'NX');
    if ((await redis.get(this.fingerprintKey)) !== this.fingerprint)
      throw new ClusterSecretMismatchError(this.deps.storeDir);
  }

  private get fingerprint(): string {
    return this.deps.box.digest(FINGERPRINT_TEXT);
  }

  private get fingerprintKey(): string {
    return this.deps.node.key('store', 'secret-check');
  }

  private get versionsKey(): string {
    return this.deps.node.key('store', 'versions');
  }

  private tableKey(table: SyncedTable): string {
    return this.deps.node.key('store', 'table', table);
  }
}
