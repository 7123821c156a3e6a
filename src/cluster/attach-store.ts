/**
 * Cluster mode for the store (store-sync.ts): built after the Gateway, before the app serves, so
 * the cluster's users, backends, settings and IP aliases are in force from the first request.
 * A failure at boot (Redis, a different secret.key) closes what was opened and is thrown.
 */
import type { Logger } from 'pino';
import type { Db } from '../store/db.ts';
import type { IpAliasesRepo } from '../store/ip-aliases-repo.ts';
import type { SecretBox } from '../store/secret-box.ts';
import { TableSnapshots } from '../store/table-snapshot.ts';
import type { UsersRepo } from '../store/users-repo.ts';
import type { ClusterNode } from './node.ts';
import { StoreSync } from './store-sync.ts';

/** A service whose commits are announced (ConfigService, UsersService). */
interface Announcing {
  onChange(fn: () => void): unknown;
}

/** What of the Gateway this needs (structural: the cluster room does not import the top). */
export interface StoreHost {
  readonly cluster?: ClusterNode;
  readonly store: Db;
  readonly secrets: SecretBox;
  readonly users: Pick<UsersRepo, 'invalidate'>;
  readonly ipAliases: Pick<IpAliasesRepo, 'replace'>;
  readonly admin: Announcing;
  readonly usersService: Announcing;
  config(): { store_dir: string };
  applyStoreChange(): void;
  close(): Promise<void>;
}

/** Undefined without `cluster` (nothing is built: a single gateway is as before). */
export async function attachClusterStore(gateway: StoreHost, log: Logger): Promise<StoreSync | undefined> {
  const node = gateway.cluster;
  if (!node) return undefined;
  const snapshots = new TableSnapshots(gateway.store);
  const sync = new StoreSync({
    node,
    snapshots,
    box: gateway.secrets,
    storeDir: gateway.config().store_dir,
    importTable: (table, snapshot) => {
      // the IP alias repository caches its map: replaced through it
      if (table !== 'ip_aliases') return snapshots.replace(table, snapshot);
      gateway.ipAliases.replace(Object.fromEntries(snapshot.rows.map((row) => [String(row.ip), String(row.alias)])));
    },
    react: (tables) => {
      // the Authenticator's verdicts and the console sessions follow the users' generation
      if (tables.has('users')) gateway.users.invalidate();
      if (tables.has('settings') || tables.has('backends')) gateway.applyStoreChange();
    },
    log,
  });
  try {
    await sync.start();
  } catch (err) {
    await gateway.close();
    await node.close();
    throw err;
  }
  gateway.admin.onChange(() => sync.changed());
  gateway.usersService.onChange(() => sync.changed());
  return sync;
}
