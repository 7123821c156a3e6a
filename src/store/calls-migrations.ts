/**
 * Versioned schema of stats.db (the call log), kept apart from store.db so a busy log never
 * contends with configuration writes. Append a migration, never edit a shipped one.
 */
import type { Migration } from './migrations.ts';

export const STATS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'call log, captured bodies, per-user daily usage for quotas',
    sql: `
      CREATE TABLE calls (
        id                 INTEGER PRIMARY KEY,
        ts                 INTEGER NOT NULL,     -- unix ms, call arrival
        request_id         TEXT NOT NULL,
        duration_ms        INTEGER NOT NULL,
        ttft_ms            INTEGER,
        endpoint           TEXT NOT NULL,
        source             TEXT NOT NULL,
        user_id            INTEGER,
        requested_model    TEXT,
        model              TEXT,
        backend            TEXT NOT NULL,        -- '(refused)' for refusals
        status             INTEGER NOT NULL,
        reason             TEXT,
        prompt_tokens      INTEGER NOT NULL DEFAULT 0,  -- cached reads and writes included
        completion_tokens  INTEGER NOT NULL DEFAULT 0,
        cached_tokens      INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning          TEXT,
        cost_usd           REAL NOT NULL DEFAULT 0,
        upstream_cost_usd  REAL
      );
      -- few indexes on purpose: every one costs each batched insert; console filters
      -- (source, backend, model) scan a time range of the ts index
      CREATE INDEX calls_ts ON calls (ts);
      CREATE INDEX calls_user_ts ON calls (user_id, ts) WHERE user_id IS NOT NULL;
      CREATE INDEX calls_request_id ON calls (request_id);

      -- gzip'd request/response bodies, capped before compression; pruned sooner than calls
      CREATE TABLE call_bodies (
        call_id        INTEGER PRIMARY KEY REFERENCES calls (id) ON DELETE CASCADE,
        ts             INTEGER NOT NULL,
        request        BLOB,
        response       BLOB,
        request_bytes  INTEGER,                 -- size before the cap
        response_bytes INTEGER
      );
      CREATE INDEX call_bodies_ts ON call_bodies (ts);

      -- quota counters: written in the same transaction as the calls they sum, so they
      -- survive restarts, and kept when retention prunes old calls
      CREATE TABLE quota_usage (
        user_id  INTEGER NOT NULL,
        day      INTEGER NOT NULL,              -- UTC days since the epoch
        requests INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        PRIMARY KEY (user_id, day)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    description: 'estimated usage, free backends, folded rows; gate refusals leave the quota counters',
    sql: `
      ALTER TABLE calls ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0; -- 1: the gateway estimated the tokens
      ALTER TABLE calls ADD COLUMN paid INTEGER NOT NULL DEFAULT 1;            -- 0: a free backend, it spent nothing
      ALTER TABLE calls ADD COLUMN count INTEGER NOT NULL DEFAULT 1;           -- calls the row stands for (folded 401s)

      -- calls refused at the gate (no backend, a 4xx but 499) no longer count towards quotas:
      -- take the ones still on record out of the counters (quota refusals never were in them)
      UPDATE quota_usage SET requests = MAX(0, requests - (
        SELECT COUNT(*) FROM calls
        WHERE calls.user_id = quota_usage.user_id
          AND calls.ts >= quota_usage.day * 86400000 AND calls.ts < (quota_usage.day + 1) * 86400000
          AND backend = '(refused)' AND status >= 400 AND status < 500 AND status <> 499
          AND COALESCE(reason, '') NOT IN ('quota_day', 'quota_month')));
    `,
  },
  {
    version: 3,
    description: 'no index on request_id',
    sql: `
      -- no query reads it, and request ids are random (UUIDv4): every insert dirtied a random
      -- page of it, 20 µs a row in a batched write against 3 µs without it (docs/decisions.md)
      DROP INDEX IF EXISTS calls_request_id;
    `,
  },
  {
    version: 4,
    description: 'why the scheduler chose the backend (the lease route), per call',
    sql: `
      ALTER TABLE calls ADD COLUMN route TEXT; -- e.g. 'spill: local eta 41 s > 10 s'; null: the best free unpaid one
    `,
  },
  {
    version: 5,
    description: 'paid spend per UTC day, all callers together, for paid_budget_usd_month',
    sql: `
      -- written in the same transaction as the calls it sums, also with call_log: false, so the
      -- month's spend survives a restart; kept as long as quota_usage (docs/decisions.md)
      CREATE TABLE paid_spend (
        day      INTEGER PRIMARY KEY,           -- UTC days since the epoch
        cost_usd REAL NOT NULL
      ) WITHOUT ROWID;
      -- seeded from what was already on record: per day the larger of the call rows' spend (every
      -- caller, while the call log was on) and the users' counters (with or without the call log)
      INSERT INTO paid_spend (day, cost_usd)
      SELECT day, MAX(spent) FROM (
        SELECT ts / 86400000 AS day,
          SUM(CASE WHEN paid = 0 THEN 0 ELSE COALESCE(upstream_cost_usd, cost_usd) END) AS spent
        FROM calls GROUP BY 1
        UNION ALL
        SELECT day, SUM(cost_usd) AS spent FROM quota_usage GROUP BY day
      ) GROUP BY day HAVING MAX(spent) > 0;
    `,
  },
];
