/**
 * The HTTP fuzz: sends `cases` random requests (fuzz-cases.ts) to an open and a locked gateway
 * over loopback, a few at a time, and checks each answer: no 5xx but an honest 502/503/504, every
 * error body in the OpenAI shape (Anthropic on /v1/messages and on /v1/models for an
 * anthropic-version caller). Then that the process saw no unhandled rejection or exception, that
 * every scheduler slot came back, and that the call log holds no request id twice.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { fuzzCase, IdPool, slotCase, type FuzzCase } from './fuzz-cases.ts';
import { startFuzzRig, type FuzzGateway } from './fuzz-rig.ts';
import type { FakeKnobs } from '../fakes/index.ts';
import { pick } from './fuzz-values.ts';
import { prng } from './prng.ts';

export interface FuzzFinding {
  kind: string;
  label: string;
  detail: string;
  /** The request, to replay it (body in base64). */
  request?: { gateway: string; method: string; path: string; headers: Record<string, string>; body?: string };
}

export interface FuzzReport {
  cases: number;
  statuses: Record<string, number>;
  /** Defects: each one a failure. */
  defects: FuzzFinding[];
  /** Odd but not wrong on their face (timeouts of streams, a dropped truncated upload): for a reader. */
  notes: FuzzFinding[];
  ms: number;
  /** Call-log rows each gateway wrote, and the ids the run gave out and named again later. */
  rows: Record<string, number>;
  ids: { responses: number; jobs: number; users: number };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Spells of trouble on the `l` backend: errors (fail over, relay), cut streams, a stall (the idle deadline). */
const TROUBLE: Partial<FakeKnobs>[] = [
  { errorStatus: 500, errorCount: 6 },
  { errorStatus: 503, errorCount: 0, retryAfter: '1' },
  { dropAfterChunks: 2 },
  { stallAfterChunks: 1 },
  { errorStatus: 401, errorCount: 3 },
  { errorStatus: 429, errorCount: 4 },
];
const CALM: Partial<FakeKnobs> = {
  errorStatus: 0,
  errorCount: 0,
  retryAfter: undefined,
  dropAfterChunks: -1,
  stallAfterChunks: -1,
};

/** Codes of the answers to requests node's HTTP parser refused (routes/error-handler.ts, clientError). */
const UNPARSED = new Set(['malformed_request']);
const HONEST_5XX = new Set([502, 503, 504]);
const ANSWER_TIMEOUT_MS = 15_000;

function send(c: FuzzCase): Promise<Answer> {
  const url = new URL(c.gateway.gw.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: c.method,
        path: c.path,
        headers: c.headers,
        setHost: !('host' in c.headers),
        agent: false,
        timeout: ANSWER_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('answer aborted')));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    if (c.hangUpAfterMs !== undefined) setTimeout(() => req.destroy(new Error('hung up')), c.hangUpAfterMs).unref();
    req.on('error', reject);
    req.end(c.body);
  });
}

/** The head and part of the body, then a half-close: the server must cope (any answer or none). */
function sendTruncated(c: FuzzCase): Promise<string> {
  const url = new URL(c.gateway.gw.url);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let head = `${c.method} ${c.path} HTTP/1.1\r\n`;
    const headers = { host: url.host, ...c.headers, 'content-length': String(c.body!.length), connection: 'close' };
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    const received: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), ANSWER_TIMEOUT_MS);
    socket.on('connect', () => {
      socket.write(`${head}\r\n`);
      socket.end(c.body!.subarray(0, Math.floor(c.body!.length / 2)));
    });
    socket.on('data', (chunk) => received.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(received).toString('latin1').split('\r\n')[0] ?? '');
    });
  });
}

const isObject = (v: unknown): v is Record<string, any> => !!v && typeof v === 'object' && !Array.isArray(v);
const isOpenAIError = (v: unknown) =>
  isObject(v) &&
  isObject(v.error) &&
  typeof v.error.message === 'string' &&
  typeof v.error.type === 'string' &&
  'param' in v.error &&
  'code' in v.error;
const isAnthropicError = (v: unknown) =>
  isObject(v) &&
  v.type === 'error' &&
  isObject(v.error) &&
  typeof v.error.type === 'string' &&
  typeof v.error.message === 'string';

/** Which error shapes a case's answer may take. */
function expectedShapes(c: FuzzCase): ('openai' | 'anthropic')[] {
  const pathname = c.path.split('?')[0]!;
  const versioned = 'anthropic-version' in c.headers;
  if (pathname === '/v1/messages' || pathname === '/v1/messages/count_tokens') return ['anthropic'];
  if (versioned && /^\/v1\/models(\/|$)/.test(pathname)) return ['anthropic'];
  return versioned ? ['openai', 'anthropic'] : ['openai'];
}

function checkAnswer(c: FuzzCase, a: Answer, report: FuzzReport): void {
  const finding = (kind: string, detail: string): FuzzFinding => ({
    kind,
    label: c.label,
    detail: `${detail}\n      ${describe(c)}`,
    request: replayable(c),
  });
  const text = a.body.toString('utf8').slice(0, 400);
  const relayed = a.headers['x-gateway-backend'] !== undefined && !text.includes('"internal_error"');
  const dishonest = a.status >= 500 && !HONEST_5XX.has(a.status);
  if (dishonest && relayed) report.notes.push(finding(`backend's ${a.status} relayed`, text));
  else if (dishonest) report.defects.push(finding(`status ${a.status}`, text));
  else if (a.status >= 500 && !c.path.startsWith('/v1/')) {
    report.notes.push(finding(`status ${a.status} off /v1`, text));
  }
  if (a.status < 400 || c.method.toUpperCase() === 'HEAD') return;
  if (c.path.startsWith('/ui')) return; // the console answers pages
  const type = String(a.headers['content-type'] ?? '');
  if (a.body.length === 0) return report.defects.push(finding('empty error body', `${a.status}`)) as unknown as void;
  let parsed: unknown;
  try {
    parsed = JSON.parse(a.body.toString('utf8'));
  } catch {
    return void report.defects.push(finding('error body not JSON', `${a.status} ${type} ${text}`));
  }
  const shapes = expectedShapes(c);
  const ok = shapes.some((s) => (s === 'openai' ? isOpenAIError(parsed) : isAnthropicError(parsed)));
  // a request node's parser refused is answered before its headers are known: OpenAI's shape
  if (!ok && isOpenAIError(parsed) && UNPARSED.has((parsed as any).error.code)) {
    return void report.notes.push(finding('unparseable request answered in OpenAI shape', `${a.status}`));
  }
  // a backend's own error answer is relayed as it came (upstream/classify.ts), in the backend's shape
  if (!ok && relayed) {
    return void report.notes.push(finding(`backend's error relayed in its own shape`, `${a.status} ${text}`));
  }
  if (!ok) report.defects.push(finding(`error not in ${shapes.join('/')} shape`, `${a.status} ${text}`));
}

const replayable = (c: FuzzCase): FuzzFinding['request'] => ({
  gateway: c.gateway.name,
  method: c.method,
  path: c.path,
  headers: c.headers,
  body: c.body?.toString('base64'),
});

/** The case's headers and the start of its body, for a defect's report. */
export function describe(c: FuzzCase): string {
  const headers = Object.entries(c.headers)
    .map(([k, v]) => `${k}: ${v.slice(0, 60)}`)
    .join('; ');
  const start = JSON.stringify(c.body?.subarray(0, 160).toString('latin1') ?? '');
  return `[${headers}] body ${c.body?.length ?? 0} B: ${start}`;
}

function slotsFree(gw: FuzzGateway): string | null {
  const snap = gw.gw.gateway.scheduler.snapshot();
  const busy = snap.backends.filter((b) => b.inflight > 0).map((b) => `${b.name}=${b.inflight}`);
  if (busy.length || snap.parked.length) return `inflight ${busy.join(' ') || 0}, parked ${snap.parked.length}`;
  return null;
}

async function finalChecks(gateways: FuzzGateway[], report: FuzzReport): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (gateways.some((g) => slotsFree(g)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const g of gateways) {
    const busy = slotsFree(g);
    if (busy) report.defects.push({ kind: 'slots held after the run', label: g.name, detail: busy });
    const log = g.gw.gateway.callLog;
    await log.flush();
    if (log.duplicates > 0) {
      const kind = 'call log: a request id recorded twice';
      report.defects.push({ kind, label: g.name, detail: `${log.duplicates}` });
    }
    const db = new Database(join(g.gw.storeDir, 'stats.db'), { readonly: true, fileMustExist: true });
    try {
      const repeated = db
        .prepare(
          'SELECT request_id, COUNT(*) AS n FROM calls WHERE request_id IS NOT NULL' +
            ' GROUP BY request_id HAVING n > 1 LIMIT 5',
        )
        .all() as { request_id: string; n: number }[];
      report.rows[g.name] = (db.prepare('SELECT COUNT(*) AS n FROM calls').get() as { n: number }).n;
      for (const r of repeated) {
        report.defects.push({ kind: 'call log: duplicate rows', label: g.name, detail: `${r.request_id} ×${r.n}` });
      }
    } finally {
      db.close();
    }
  }
}

export interface FuzzOptions {
  cases: number;
  seed: number;
  /** Cases in flight at once (default 4). */
  concurrency?: number;
  log?: (line: string) => void;
}

export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const report: FuzzReport = {
    cases: 0,
    statuses: {},
    defects: [],
    notes: [],
    ms: 0,
    rows: {},
    ids: { responses: 0, jobs: 0, users: 0 },
  };
  const processFinding = (kind: string) => (err: unknown) =>
    report.defects.push({
      kind,
      label: 'process',
      detail: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
  const onRejection = processFinding('unhandled rejection');
  const onException = processFinding('uncaught exception');
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  const rig = await startFuzzRig();
  try {
    const rng = prng(opts.seed);
    const ids = new IdPool();
    let next = 0;
    const worker = async () => {
      while (next < opts.cases) {
        const n = next++;
        if (n % 400 === 200) rig.local.setKnobs(pick(rng, TROUBLE));
        if (n % 400 === 300) rig.local.setKnobs(CALM);
        if (n % 150 === 149) {
          // a burst: more calls at once than the backends take, some hung up
          const burst = Array.from({ length: 24 }, () => slotCase(rng, rig.gateways));
          await Promise.all(burst.map((c) => runCase(c, ids, report)));
          report.cases += burst.length;
        }
        const c = fuzzCase(rng, rig.gateways, ids);
        await runCase(c, ids, report);
        report.cases++;
        if (opts.log && (n + 1) % 500 === 0) opts.log(`${n + 1} cases, ${report.defects.length} defects`);
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker));
    await finalChecks(rig.gateways, report);
    report.ids = { responses: ids.responses.length, jobs: ids.jobs.length, users: ids.users.length };
  } finally {
    await rig.close();
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  }
  report.ms = Date.now() - started;
  return report;
}

async function runCase(c: FuzzCase, ids: IdPool, report: FuzzReport): Promise<void> {
  if (c.truncate) {
    const line = await sendTruncated(c);
    const status = Number(line.split(' ')[1] ?? 0);
    report.statuses[`truncated ${status || 'none'}`] = (report.statuses[`truncated ${status || 'none'}`] ?? 0) + 1;
    if (status >= 500 && !HONEST_5XX.has(status)) {
      report.defects.push({ kind: `status ${status}`, label: c.label, detail: line });
    }
    return;
  }
  let answer: Answer;
  try {
    answer = await send(c);
  } catch (err) {
    const message = (err as Error).message;
    const code = (err as NodeJS.ErrnoException).code;
    if (/Invalid character|ERR_INVALID|Invalid value/i.test(message) || code?.startsWith('ERR_')) {
      report.statuses.unsendable = (report.statuses.unsendable ?? 0) + 1;
      return;
    }
    if (message === 'hung up' && c.hangUpAfterMs !== undefined) {
      report.statuses['hung up'] = (report.statuses['hung up'] ?? 0) + 1;
      return;
    }
    report.notes.push({ kind: `no answer: ${message}`, label: c.label, detail: describe(c), request: replayable(c) });
    report.statuses['no answer'] = (report.statuses['no answer'] ?? 0) + 1;
    return;
  }
  report.statuses[answer.status] = (report.statuses[answer.status] ?? 0) + 1;
  checkAnswer(c, answer, report);
  if (answer.status < 300 && String(answer.headers['content-type'] ?? '').includes('json')) {
    try {
      ids.remember(c.path, JSON.parse(answer.body.toString('utf8')));
    } catch {
      /* not JSON after all */
    }
  }
}
