/**
 * The `responses` table: Responses the gateway keeps (background ones, and `store: true`), so
 * that `GET /v1/responses/{id}` and `previous_response_id` work. Each row has an owner (only
 * they and admins see it) and an expiry (`responses_ttl_h`). The first terminal status wins:
 * a finish never overwrites a cancel, nor a cancel a finish.
 *
 * The `native_responses` table remembers, for the same owners and TTL, which backend made each
 * response a `responses: native` backend stored itself (under its own id), so that reads,
 * deletes and `previous_response_id` chains of that id go back there.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.ts';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete';

export const TERMINAL_STATUSES: ReadonlySet<ResponseStatus> = new Set([
  'completed',
  'failed',
  'cancelled',
  'incomplete',
]);

export interface StoredResponse {
  id: string;
  owner: string;
  status: ResponseStatus;
  background: boolean;
  response: Record<string, unknown>;
  history: unknown[];
  events: string | null;
  createdAt: number;
  expiresAt: number;
}

interface Row {
  id: string;
  owner: string;
  status: ResponseStatus;
  background: number;
  response: string;
  history: string;
  events: string | null;
  created_at: number;
  expires_at: number;
}

const UNFINISHED = `status IN ('queued','in_progress')`;

/** Where a native backend's response lives: who may see it, and the backend that holds it. */
export interface NativeOrigin {
  owner: string;
  backend: string;
}

export class ResponsesRepo {
  readonly #insert: Statement<[string, string, string, number, string, string, string | null, number, number, number]>;
  readonly #get: Statement<[string, number], Row>;
  readonly #update: Statement<[string, string, string, string | null, number, string]>;
  readonly #delete: Statement<[string]>;
  readonly #purge: Statement<[number]>;
  readonly #failUnfinished: Statement<[number]>;
  readonly #unfinished: Statement<[], Row>;
  readonly #rememberNative: Statement<[string, string, string, number, number]>;
  readonly #nativeOrigin: Statement<[string, number], NativeOrigin>;
  readonly #forgetNative: Statement<[string]>;
  readonly #purgeNative: Statement<[number]>;

  constructor(db: Db) {
    this.#insert = db.prepare(
      'INSERT INTO responses (id, owner, status, background, response, history, events, created_at, ' +
        'updated_at, expires_at)\n      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.#get = db.prepare('SELECT * FROM responses WHERE id = ? AND expires_at > ?');
    // only an unfinished row moves: the first terminal status stays
    this.#update = db.prepare(
      `UPDATE responses SET status = ?, response = ?, history = ?, events = ?, updated_at = ? ` +
        `WHERE id = ? AND ${UNFINISHED}`,
    );
    this.#delete = db.prepare('DELETE FROM responses WHERE id = ?');
    this.#purge = db.prepare('DELETE FROM responses WHERE expires_at <= ?');
    this.#unfinished = db.prepare(`SELECT * FROM responses WHERE ${UNFINISHED}`);
    this.#failUnfinished = db.prepare(`UPDATE responses SET status = 'failed', updated_at = ? WHERE ${UNFINISHED}`);
    this.#rememberNative = db.prepare(`INSERT OR REPLACE INTO native_responses
      (id, owner, backend, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`);
    this.#nativeOrigin = db.prepare('SELECT owner, backend FROM native_responses WHERE id = ? AND expires_at > ?');
    this.#forgetNative = db.prepare('DELETE FROM native_responses WHERE id = ?');
    this.#purgeNative = db.prepare('DELETE FROM native_responses WHERE expires_at <= ?');
  }

  /** Remembers that `backend` made and stores the response `id`, for `owner`, until `expiresAt`. */
  rememberNative(id: string, origin: NativeOrigin, now: number, expiresAt: number): void {
    this.#rememberNative.run(id, origin.owner, origin.backend, now, expiresAt);
  }

  /** The owner and backend of a native response id, unless unknown or expired. */
  nativeOrigin(id: string, now: number): NativeOrigin | undefined {
    return this.#nativeOrigin.get(id, now);
  }

  forgetNative(id: string): void {
    this.#forgetNative.run(id);
  }

  insert(r: StoredResponse, now: number): void {
    this.#insert.run(
      r.id,
      r.owner,
      r.status,
      r.background ? 1 : 0,
      JSON.stringify(r.response),
      JSON.stringify(r.history),
      r.events,
      r.createdAt,
      now,
      r.expiresAt,
    );
  }

  /** The row, unless it expired. */
  get(id: string, now: number): StoredResponse | undefined {
    const row = this.#get.get(id, now);
    return row && fromRow(row);
  }

  /** Moves an unfinished row on; false when it had reached a terminal status already. */
  update(
    id: string,
    status: ResponseStatus,
    response: Record<string, unknown>,
    history: unknown[],
    events: string | null,
    now: number,
  ): boolean {
    return this.#update.run(status, JSON.stringify(response), JSON.stringify(history), events, now, id).changes > 0;
  }

  delete(id: string): boolean {
    return this.#delete.run(id).changes > 0;
  }

  purgeExpired(now: number): number {
    return this.#purge.run(now).changes + this.#purgeNative.run(now).changes;
  }

  /**
   * After a restart nothing is running: every unfinished response failed (its body says why).
   * Returns how many.
   */
  failUnfinished(now: number): number {
    const rows = this.#unfinished.all();
    for (const row of rows) {
      const response = JSON.parse(row.response) as Record<string, unknown>;
      response.status = 'failed';
      response.error = { code: 'server_error', message: 'The gateway stopped before this response finished.' };
      this.#update.run('failed', JSON.stringify(response), row.history, row.events, now, row.id);
    }
    this.#failUnfinished.run(now);
    return rows.length;
  }
}

function fromRow(row: Row): StoredResponse {
  return {
    id: row.id,
    owner: row.owner,
    status: row.status,
    background: row.background === 1,
    response: JSON.parse(row.response) as Record<string, unknown>,
    history: JSON.parse(row.history) as unknown[],
    events: row.events,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
