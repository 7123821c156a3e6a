/**
 * The backup service wired to a gateway's own open connections (store.db, the call log's
 * stats.db, the media jobs' jobs.db) and its secret.key, writing under `backup_dir`.
 */
import { join, resolve } from 'node:path';
import { BackupService } from './admin/backup-service.ts';
import type { GatewayConfig } from './config/types.ts';
import type { Gateway } from './gateway.ts';
import { packageVersion } from './package-version.ts';
import { JOBS_DB, STATS_DB, STORE_DB } from './store/backup/files.ts';
import { SECRET_FILE } from './store/secret.ts';

/** `backup_dir`, or `<store_dir>/backups` when it is not set. */
export function backupDirOf(cfg: Pick<GatewayConfig, 'backup_dir' | 'store_dir'>): string {
  return resolve(cfg.backup_dir ?? join(cfg.store_dir, 'backups'));
}

export function backupServiceOf(gateway: Gateway): BackupService {
  // the folder the store was opened in (store_dir is restart-only: a reload does not move it)
  const storeDir = gateway.config().store_dir;
  return new BackupService({
    databases: () => [
      { name: STORE_DB, backup: (to) => gateway.store.backup(to) },
      { name: STATS_DB, backup: (to) => gateway.callLog.backupTo(to) },
      { name: JOBS_DB, backup: (to) => gateway.media.store.backupTo(to) },
    ],
    files: () => [{ name: SECRET_FILE, path: join(storeDir, SECRET_FILE) }],
    dir: () => backupDirOf({ backup_dir: gateway.config().backup_dir, store_dir: storeDir }),
    gatewayVersion: packageVersion(),
  });
}
