/**
 * The `backend_models` table: the last model list discovered per backend, so that after a
 * restart the gateway can route before the first discovery poll completes.
 */
import type { Statement } from 'better-sqlite3';
import type { ModelInfo } from '../config/model-info.ts';
import type { Db } from './db.ts';

export class ModelCacheRepo {
  readonly #save: Statement<[string, string, number]>;
  readonly #loadAll: Statement<[], { backend: string; models: string }>;
  readonly #delete: Statement<[string]>;

  constructor(db: Db) {
    this.#save = db.prepare(
      `INSERT INTO backend_models (backend, models, discovered_at) VALUES (?, ?, ?)
       ON CONFLICT (backend) DO UPDATE SET models = excluded.models, discovered_at = excluded.discovered_at`,
    );
    this.#loadAll = db.prepare('SELECT backend, models FROM backend_models ORDER BY backend');
    this.#delete = db.prepare('DELETE FROM backend_models WHERE backend = ?');
  }

  /** Replaces the cached list of `backend`. */
  save(backend: string, models: readonly ModelInfo[]): void {
    this.#save.run(backend, JSON.stringify(models), Date.now());
  }

  /** Every cached list, backend name → models. */
  loadAll(): Map<string, ModelInfo[]> {
    return new Map(this.#loadAll.all().map((row) => [row.backend, JSON.parse(row.models) as ModelInfo[]]));
  }

  /** Forgets a backend's list (when the backend is removed); returns whether there was one. */
  delete(backend: string): boolean {
    return this.#delete.run(backend).changes > 0;
  }
}
