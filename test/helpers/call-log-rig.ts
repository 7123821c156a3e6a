/** The call log's test rig (stats-call-log*.test.ts): a log in a temp folder, records, what is on disk. */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { ModelPricing } from '../../src/backends/types.ts';
import { CallLog, type CallLogOptions, type CallRecord } from '../../src/stats/call-log.ts';
import type { Usage } from '../../src/wire/usage.ts';
import { tempDirs } from './temp-dirs.ts';

/** The call-log columns of a usage read by the request path. */
export function usageColumns(u: Usage) {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    cached_tokens: u.cached_tokens ?? 0,
    cache_write_tokens: u.cache_write_tokens ?? 0,
    upstream_cost_usd: u.cost ?? null,
  };
}

export const NOW = Date.UTC(2026, 2, 15, 12, 0, 0); // 2026-03-15T12:00:00Z
export const SONNET: ModelPricing = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

export const tempStore = tempDirs('llmgw-stats-');

/** The timers never fire during a test: writes happen when the test says so. */
export const QUIET: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 14 };

export function openLog(t: { after: (fn: () => void) => void }, opts: Partial<CallLogOptions> = {}, dir = tempStore()) {
  const log = CallLog.open(dir, { ...QUIET, ...opts });
  t.after(() => log.close());
  return { log, dir, file: join(dir, 'stats.db') };
}

let seq = 0;
export function call(over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: NOW,
    request_id: `req-${++seq}`,
    duration_ms: 120,
    ttft_ms: 40,
    endpoint: '/v1/chat/completions',
    source: 'alice',
    user_id: 1,
    requested_model: 'fast',
    model: 'qwen3-8b',
    backend: 'gpu1',
    status: 200,
    reason: null,
    prompt_tokens: 100,
    completion_tokens: 20,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning: null,
    cost_usd: 0,
    upstream_cost_usd: null,
    ...over,
  };
}

/** What stats.db holds, through a connection of its own (what a crash would leave). */
export function onDisk(file: string): { rows: number; ids: number } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT COUNT(*) AS rows, COUNT(DISTINCT request_id) AS ids FROM calls').get() as {
      rows: number;
      ids: number;
    };
  } finally {
    db.close();
  }
}

export const rowsOnDisk = (file: string) => onDisk(file).rows;

export const turn = () => new Promise((r) => setImmediate(r));

export function fileState(file: string): string {
  return [file, `${file}-wal`]
    .map((f) => (existsSync(f) ? `${statSync(f).size}:${statSync(f).mtimeMs}` : 'absent'))
    .join('|');
}
