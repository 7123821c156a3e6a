/**
 * Versioned schema of jobs.db (media generation jobs), a file of its own under the jobs dir so
 * that frequent progress writes never contend with store.db. Append a migration, never edit a
 * shipped one.
 */
import type { Migration } from '../../store/migrations.ts';

export const JOBS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'media jobs, their results and their uploaded inputs',
    sql: `
      CREATE TABLE jobs (
        id          TEXT PRIMARY KEY,        -- job_ + 32 hex (unguessable)
        owner       TEXT NOT NULL,           -- 'user:<id>', 'master' or 'open'
        alias       TEXT NOT NULL,           -- the media alias asked for
        status      TEXT NOT NULL CHECK (status IN ('queued','running','done','failed','cancelled')),
        backend     TEXT,                    -- the ComfyUI box, once picked
        prompt_id   TEXT,                    -- ComfyUI's prompt id on that box
        progress    REAL NOT NULL DEFAULT 0, -- 0..100
        node        TEXT,                    -- the node running now
        error       TEXT,                    -- JSON { code, message }
        summary     TEXT,                    -- JSON: removed/bypassed nodes, seed
        request     TEXT NOT NULL,           -- JSON: prompt, params, inputs' names and sha256 (never bytes)
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        started_at  INTEGER,
        finished_at INTEGER,
        expires_at  INTEGER NOT NULL
      );
      CREATE INDEX jobs_owner ON jobs (owner, created_at);
      CREATE INDEX jobs_created ON jobs (created_at);
      CREATE INDEX jobs_expiry ON jobs (expires_at);
      CREATE INDEX jobs_unfinished ON jobs (status) WHERE status IN ('queued','running');
      CREATE TABLE job_results (
        job_id  TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        n       INTEGER NOT NULL,
        kind    TEXT NOT NULL CHECK (kind IN ('image','video','audio','mesh','other')),
        mime    TEXT NOT NULL,
        file    TEXT NOT NULL,               -- name inside the job's folder: <n>.<ext>
        bytes   INTEGER NOT NULL,
        sha256  TEXT NOT NULL,
        width   INTEGER,
        height  INTEGER,
        PRIMARY KEY (job_id, n)
      ) WITHOUT ROWID;
      CREATE TABLE job_inputs (
        job_id  TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        n       INTEGER NOT NULL,
        param   TEXT NOT NULL,               -- the request parameter it fills
        mime    TEXT NOT NULL,
        file    TEXT NOT NULL,               -- name inside the job's folder: in-<n>.<ext>
        bytes   INTEGER NOT NULL,
        sha256  TEXT NOT NULL,
        PRIMARY KEY (job_id, n)
      ) WITHOUT ROWID;
    `,
  },
];
