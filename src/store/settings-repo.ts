/**
 * The `settings` table: console-edited top-level settings, one JSON value per key. Written and
 * read exactly: an integer beyond 2^53 (a workflow's baked-in seed in `image_models`, a bigint
 * since it was read with parseExactJson) is stored as its digits and comes back a bigint.
 */
import type { Statement } from 'better-sqlite3';
import { writeJson } from '../wire/exact-json.ts';
import { parseExactJson } from '../wire/exact-json.ts';
import type { Db } from './db.ts';

export class SettingsRepo {
  readonly #all: Statement<[], { key: string; value: string }>;
  readonly #get: Statement<[string], { value: string }>;
  readonly #set: Statement<[string, string, number]>;
  readonly #delete: Statement<[string]>;

  constructor(db: Db) {
    this.#all = db.prepare('SELECT key, value FROM settings ORDER BY key');
    this.#get = db.prepare('SELECT value FROM settings WHERE key = ?');
    this.#set = db.prepare(
      `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    );
    this.#delete = db.prepare('DELETE FROM settings WHERE key = ?');
  }

  /** Every stored setting, key → value. */
  all(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const row of this.#all.all()) out[row.key] = parseExactJson(row.value);
    return out;
  }

  /** The stored value, or undefined when the key is not set. */
  get(key: string): unknown {
    const row = this.#get.get(key);
    return row === undefined ? undefined : parseExactJson(row.value);
  }

  /** Stores any JSON-serialisable value, bigints as their digits (undefined is refused: use `delete`). */
  set(key: string, value: unknown): void {
    if (value === undefined) throw new TypeError(`setting ${key}: undefined is not storable (use delete)`);
    this.#set.run(key, writeJson(value), Date.now());
  }

  /** Removes the key; returns whether it existed. */
  delete(key: string): boolean {
    return this.#delete.run(key).changes > 0;
  }
}
