/**
 * The `backends` table: backends added or edited in the console. The spec is stored as JSON
 * without its name (the primary key); the API key, each key of a pool (`api_keys`) and the URL's
 * userinfo (`user:password@`) are encrypted through the SecretBox and never written in clear.
 */
import type { Statement } from 'better-sqlite3';
import { BACKEND_DEFAULTS } from '../config/defaults.ts';
import type { BackendSpec } from '../config/types.ts';
import type { Db } from './db.ts';
import type { SecretBox } from './secret-box.ts';
import { joinUserinfo, splitUserinfo } from '../config/url-userinfo.ts';

/** The JSON in `backends.spec`: the URL without its userinfo, which is encrypted like the key. */
type StoredSpec = Omit<BackendSpec, 'name' | 'api_key' | 'api_keys'> & {
  api_key_cipher?: string;
  api_keys_cipher?: string[];
  url_userinfo_cipher?: string;
};

interface BackendRow {
  name: string;
  spec: string;
}

export class BackendsRepo {
  readonly #box: SecretBox;
  readonly #list: Statement<[], BackendRow>;
  readonly #get: Statement<[string], BackendRow>;
  readonly #upsert: Statement<[string, string, number]>;
  readonly #delete: Statement<[string]>;

  constructor(db: Db, box: SecretBox) {
    this.#box = box;
    this.#list = db.prepare('SELECT name, spec FROM backends ORDER BY rowid');
    this.#get = db.prepare('SELECT name, spec FROM backends WHERE name = ?');
    this.#upsert = db.prepare(
      `INSERT INTO backends (name, spec, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at`,
    );
    this.#delete = db.prepare('DELETE FROM backends WHERE name = ?');
  }

  /** Every stored backend, in the order they were first added. */
  list(): BackendSpec[] {
    return this.#list.all().map((row) => this.#fromRow(row));
  }

  get(name: string): BackendSpec | undefined {
    const row = this.#get.get(name);
    return row === undefined ? undefined : this.#fromRow(row);
  }

  /** Inserts or replaces the whole spec of `spec.name` (an absent api_key removes the stored one). */
  upsert(spec: BackendSpec): void {
    const { name, api_key, api_keys, ...rest } = spec;
    const { url, userinfo } = splitUserinfo(rest.url);
    const stored: StoredSpec = { ...rest, url };
    if (api_key !== undefined) stored.api_key_cipher = this.#box.encrypt(api_key);
    if (api_keys !== undefined) stored.api_keys_cipher = api_keys.map((key) => this.#box.encrypt(key));
    if (userinfo !== undefined) stored.url_userinfo_cipher = this.#box.encrypt(userinfo);
    this.#upsert.run(name, JSON.stringify(stored), Date.now());
  }

  /** Removes the backend; returns whether it existed. */
  delete(name: string): boolean {
    return this.#delete.run(name).changes > 0;
  }

  #fromRow(row: BackendRow): BackendSpec {
    const { api_key_cipher, api_keys_cipher, url_userinfo_cipher, ...rest } = JSON.parse(row.spec) as StoredSpec;
    const spec: BackendSpec = { ...BACKEND_DEFAULTS, ...rest, name: row.name };
    if (url_userinfo_cipher !== undefined) spec.url = joinUserinfo(spec.url, this.#box.decrypt(url_userinfo_cipher));
    if (api_key_cipher !== undefined) spec.api_key = this.#box.decrypt(api_key_cipher);
    if (api_keys_cipher !== undefined) spec.api_keys = api_keys_cipher.map((c) => this.#box.decrypt(c));
    return spec;
  }
}
