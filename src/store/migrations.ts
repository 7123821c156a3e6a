/**
 * Versioned schema of store.db. Append a migration, never edit a shipped one: `openStore`
 * applies every migration whose version is above `PRAGMA user_version`, each in a transaction.
 */
export interface Migration {
  version: number;
  description: string;
  sql: string;
}

export const STORE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'settings, backends, last discovered model list per backend',
    sql: `
      CREATE TABLE settings (
        key        TEXT PRIMARY KEY,
        value      TEXT NOT NULL,            -- JSON
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE backends (
        name       TEXT PRIMARY KEY,
        spec       TEXT NOT NULL,            -- JSON BackendSpec without name; api_key encrypted
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE backend_models (
        backend     TEXT PRIMARY KEY,
        models      TEXT NOT NULL,           -- JSON ModelInfo[]
        discovered_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 2,
    description: 'users with encrypted keys and lookup digests; IP aliases',
    sql: `
      CREATE TABLE users (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        name             TEXT NOT NULL UNIQUE,
        role             TEXT NOT NULL CHECK (role IN ('user','admin')),
        enabled          INTEGER NOT NULL DEFAULT 1,
        key_digest       TEXT NOT NULL UNIQUE, -- HMAC-SHA256(secret, key), hex
        key_cipher       TEXT NOT NULL,        -- AES-256-GCM(iv|tag|ciphertext), base64
        key_hint         TEXT NOT NULL,        -- 'sk-…abcd', safe to show
        allow            TEXT NOT NULL DEFAULT '[]',
        quota_req_day    INTEGER,
        quota_cost_month REAL,
        note             TEXT NOT NULL DEFAULT '',
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL
      );
      CREATE TABLE ip_aliases (
        ip    TEXT PRIMARY KEY,
        alias TEXT NOT NULL
      );
    `,
  },
  {
    version: 3,
    description: 'stored Responses (background and store: true), owner-gated, with a TTL',
    sql: `
      CREATE TABLE responses (
        id         TEXT PRIMARY KEY,            -- resp_ + 48 hex (unguessable)
        owner      TEXT NOT NULL,               -- 'user:<id>', 'master' or 'open'
        status     TEXT NOT NULL,               -- queued | in_progress | completed | failed | cancelled | incomplete
        background INTEGER NOT NULL,
        response   TEXT NOT NULL,               -- JSON Response object as it stands
        history    TEXT NOT NULL,               -- JSON items: earlier turns + this input + this output
        events     TEXT,                        -- the SSE text of a finished background stream, for replay
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX responses_expiry ON responses (expires_at);
    `,
  },
  {
    version: 4,
    description: 'which backend holds each response a responses: native backend stored itself',
    sql: `
      CREATE TABLE native_responses (
        id         TEXT PRIMARY KEY,            -- the backend's own response id, as the client was told
        owner      TEXT NOT NULL,               -- as in responses
        backend    TEXT NOT NULL,               -- the backend that made (and stores) it
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX native_responses_expiry ON native_responses (expires_at);
    `,
  },
  {
    version: 5,
    description: "users' fair-share weight and cap on calls at once",
    sql: `
      ALTER TABLE users ADD COLUMN share REAL NOT NULL DEFAULT 1; -- fair-share weight, > 0
      ALTER TABLE users ADD COLUMN max_inflight INTEGER;          -- calls at once; null or 0: no cap
    `,
  },
];
