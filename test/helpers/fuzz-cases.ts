/**
 * One random request for the HTTP fuzz: a route of the gateway, its method (sometimes an odd
 * one), a valid-looking body mutated (or a multipart form with odd parts), odd headers.
 */
import { gzipSync } from 'node:zlib';
import { FUZZ_MODELS, type FuzzGateway } from './fuzz-rig.ts';
import { chance, int, mutateBody, mutateText, oddValue, pick, type Rng } from './fuzz-values.ts';

export interface FuzzCase {
  gateway: FuzzGateway;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Send the head and only part of the body, then half-close the socket. */
  truncate?: boolean;
  /** Hang up this many ms after sending (before or while the answer comes). */
  hangUpAfterMs?: number;
  /** What the case is, for the report. */
  label: string;
}

/** Ids the gateways gave out (responses, jobs, users), so later cases can name real ones. */
export class IdPool {
  readonly responses: string[] = [];
  readonly jobs: string[] = [];
  readonly users: string[] = [];
  remember(path: string, body: unknown): void {
    if (!body || typeof body !== 'object') return;
    const b = body as Record<string, unknown>;
    const plainId = typeof b.id === 'string' || typeof b.id === 'number' ? String(b.id) : '';
    const id = typeof b.job_id === 'string' ? b.job_id : plainId;
    if (!id) return;
    const list = path.startsWith('/v1/responses')
      ? this.responses
      : path.startsWith('/v1/generations') || path.startsWith('/v1/jobs')
        ? this.jobs
        : path.startsWith('/admin/api/users')
          ? this.users
          : undefined;
    if (list && list.length < 200 && !list.includes(id)) list.push(id);
  }
}

const ODD_IDS = [
  'x',
  'resp_nope',
  '..%2F..%2Fhealth',
  '%00',
  `resp_${'a'.repeat(300)}`,
  '%E2%82',
  '0',
  '-1',
  '1e9',
  'null',
  '%20',
  'job_%22%3E',
  '1',
  '2',
  '9007199254740993',
  '%F0%9F%92%A5',
  'a.b',
  "'",
  '%2e%2e',
];

const anyModel = (rng: Rng, family: readonly string[]) =>
  chance(rng, 0.85) ? pick(rng, family) : pick(rng, ODD_MODELS);
const ODD_MODELS = ['nope', '', 'l/x', '../n', 'c', 'n', 'sd15', 'L', ' l', 'l\u0000'];

const msgs = () => [{ role: 'user', content: 'hi' }];

type Body = Record<string, unknown>;
interface Route {
  method: string;
  path: (rng: Rng, ids: IdPool) => string;
  body?: (rng: Rng) => Body;
  multipart?: (rng: Rng) => { fields: Record<string, string>; files: string[] };
  form?: boolean;
  weight: number;
}

const idOf = (rng: Rng, real: string[]) =>
  real.length && chance(rng, 0.6) ? encodeURIComponent(pick(rng, real)) : pick(rng, ODD_IDS);
const fixed = (p: string) => () => p;
const ADMIN_PATHS = [
  '/admin/api/users',
  '/admin/api/ip-aliases',
  '/admin/api/calls',
  '/admin/api/stats',
  '/admin/api/settings',
  '/admin/api/backends',
  '/admin/api/backends/test',
];
const SETTINGS = [
  'park_timeout_s',
  'request_timeout_s',
  'cors_origins',
  'retention_days',
  'nope',
  'max_parked',
  'log_calls',
  'stream_idle_timeout_s',
  'client_stall_timeout_s',
  'expose_backend_names',
  'allowed_hosts',
];
const UI_PATHS = [
  '/ui',
  '/ui/',
  '/ui/aliases',
  '/ui/aliases/new',
  '/ui/aliases/edit?alias=l',
  '/ui/login',
  '/ui/backends',
  '/ui/backends/new',
  '/ui/backends/local/edit',
  '/ui/mapping',
  '/ui/mapping/l',
  '/ui/reasoning',
  '/ui/playground',
  '/ui/playground/call?model=l',
  '/ui/calls',
  '/ui/calls/1',
  '/ui/calls/x',
  '/ui/jobs',
  '/ui/jobs/x',
  '/ui/stats',
  '/ui/server',
  '/ui/users',
  '/ui/users/new',
  '/ui/users/1',
  '/ui/users/x',
  '/ui/nope',
  '/ui/assets/../../x',
];
const UI_POSTS = [
  '/ui/aliases/save',
  '/ui/aliases/remove',
  '/ui/login',
  '/ui/logout',
  '/ui/bootstrap',
  '/ui/backends',
  '/ui/backends/test',
  '/ui/backends/nope/enabled',
  '/ui/backends/local/drain',
  '/ui/mapping',
  '/ui/mapping/register',
  '/ui/reasoning/save',
  '/ui/reasoning/move',
  '/ui/jobs/x/cancel',
  '/ui/server/park_timeout_s',
  '/ui/users',
  '/ui/users/ip-aliases',
  '/ui/users/1/enabled',
  '/ui/users/x/rotate',
];

const ROUTES: Route[] = [
  {
    method: 'POST',
    path: fixed('/v1/chat/completions'),
    weight: 10,
    body: (r) => ({
      model: anyModel(r, FUZZ_MODELS.chat),
      messages: msgs(),
      max_tokens: 8,
      stream: chance(r, 0.4),
    }),
  },
  {
    method: 'POST',
    path: fixed('/v1/completions'),
    weight: 4,
    body: (r) => ({
      model: anyModel(r, FUZZ_MODELS.chat),
      prompt: 'hi',
      max_tokens: 8,
      stream: chance(r, 0.3),
    }),
  },
  {
    method: 'POST',
    path: fixed('/v1/embeddings'),
    weight: 4,
    body: (r) => ({
      model: anyModel(r, FUZZ_MODELS.chat),
      input: pick(r, ['hi', ['a', 'b'], [1, 2, 3]]),
    }),
  },
  {
    method: 'POST',
    path: fixed('/v1/responses'),
    weight: 10,
    body: (r) => ({
      model: anyModel(r, [...FUZZ_MODELS.native, ...FUZZ_MODELS.chat]),
      input: 'hi',
      stream: chance(r, 0.3),
      ...(chance(r, 0.25) ? { background: true } : {}),
      ...(chance(r, 0.2) ? { store: false } : {}),
    }),
  },
  {
    method: 'GET',
    path: (r, ids) => `/v1/responses/${idOf(r, ids.responses)}${chance(r, 0.2) ? '?stream=true' : ''}`,
    weight: 4,
  },
  { method: 'DELETE', path: (r, ids) => `/v1/responses/${idOf(r, ids.responses)}`, weight: 2 },
  {
    method: 'GET',
    path: (r, ids) =>
      `/v1/responses/${idOf(r, ids.responses)}/input_items?${pick(r, [
        '',
        'limit=0',
        'limit=-1',
        'limit=1e9',
        'order=x',
        'after=zz',
        'limit=abc&limit=2',
      ])}`,
    weight: 2,
  },
  { method: 'POST', path: (r, ids) => `/v1/responses/${idOf(r, ids.responses)}/cancel`, weight: 2 },
  {
    method: 'POST',
    path: fixed('/v1/messages'),
    weight: 10,
    body: (r) => ({
      model: anyModel(r, [...FUZZ_MODELS.anthropic, ...FUZZ_MODELS.chat]),
      max_tokens: 8,
      messages: msgs(),
      stream: chance(r, 0.3),
      ...(chance(r, 0.15) ? { thread: { type: 'continue', previous_message_id: 'msg_x' } } : {}),
    }),
  },
  {
    method: 'POST',
    path: fixed('/v1/messages/count_tokens'),
    weight: 3,
    body: (r) => ({
      model: anyModel(r, [...FUZZ_MODELS.anthropic, ...FUZZ_MODELS.chat]),
      messages: msgs(),
    }),
  },
  {
    method: 'GET',
    path: (r) =>
      pick(r, [
        '/v1/models',
        '/v1/models?limit=2',
        '/v1/models?after_id=x&limit=-3',
        '/v1/models/l',
        '/v1/models/c',
        '/v1/models/nope',
        '/v1/models/acme%2FQwen3-8B-Instruct',
        '/v1/models/%00',
        '/v1/models?limit=1e99',
        '/v1/models/sd15',
      ]),
    weight: 5,
  },
  {
    method: 'POST',
    path: fixed('/v1/audio/speech'),
    weight: 3,
    body: (r) => ({
      model: anyModel(r, FUZZ_MODELS.audio),
      input: 'hi',
      voice: 'alloy',
      response_format: pick(r, ['mp3', 'wav', 'x']),
    }),
  },
  {
    method: 'POST',
    path: (r) => pick(r, ['/v1/audio/transcriptions', '/v1/audio/translations']),
    weight: 4,
    multipart: (r) => ({
      fields: { model: anyModel(r, FUZZ_MODELS.audio), response_format: pick(r, ['json', 'text', 'x']) },
      files: ['file'],
    }),
  },
  {
    method: 'POST',
    path: fixed('/v1/images/generations'),
    weight: 4,
    body: (r) => ({
      model: anyModel(r, FUZZ_MODELS.image),
      prompt: 'a cat',
      n: 1,
      size: pick(r, ['64x64', '1x1', '99999x99999', 'x']),
    }),
  },
  {
    method: 'POST',
    path: fixed('/v1/images/edits'),
    weight: 4,
    multipart: (r) => ({
      fields: { model: anyModel(r, FUZZ_MODELS.image), prompt: 'a cat', n: pick(r, ['1', '0', '-1', 'x', '1e9']) },
      files: pick(r, [['image'], ['image', 'mask'], ['image[]', 'image[]'], [], ['mask'], ['nope']]),
    }),
  },
  {
    method: 'POST',
    path: fixed('/v1/generations'),
    weight: 3,
    body: (r) => ({
      model: anyModel(r, FUZZ_MODELS.image),
      prompt: 'a cat',
      params: { seed: 1 },
      mode: pick(r, ['async', 'sync', 'x']),
    }),
  },
  { method: 'GET', path: (r) => `/v1/generations/${pick(r, ['sd15', 'nope', '%00', 'inpaint'])}/loras`, weight: 1 },
  {
    method: 'GET',
    path: (r, ids) =>
      pick(r, [
        '/v1/jobs',
        '/v1/jobs?limit=x',
        '/v1/jobs?status=zz',
        `/v1/jobs/${idOf(r, ids.jobs)}`,
        `/v1/jobs/${idOf(r, ids.jobs)}/result/${pick(r, ['0', '1', '-1', 'x', '99'])}`,
        `/v1/jobs/${idOf(r, ids.jobs)}/input/${pick(r, ['0', 'x'])}`,
        `/v1/jobs/${idOf(r, ids.jobs)}/preview`,
        `/v1/jobs/${idOf(r, ids.jobs)}/events`,
      ]),
    weight: 5,
  },
  { method: 'POST', path: (r, ids) => `/v1/jobs/${idOf(r, ids.jobs)}/cancel`, weight: 2 },
  {
    method: 'GET',
    path: (r) =>
      pick(r, [
        '/health',
        '/health?verbose=1',
        '/health?x=%zz',
        '/health?format=prometheus',
        '/metrics',
        '/metrics?x=1',
        '/',
        '/nope',
        '/v1',
        '/v1/',
        '/v2/chat/completions',
        '//v1/models',
        '/v1/models/../health',
        '/%2e%2e/health',
        '/v1/chat/completions',
      ]),
    weight: 5,
  },
  {
    method: 'GET',
    path: (r, ids) =>
      `${pick(r, ADMIN_PATHS)}${pick(r, [
        '',
        '?limit=x',
        '?limit=-1',
        '?since=zz',
        '?group=nope',
        '?status=abc',
      ])}`.replace('/test', chance(r, 0.5) ? '' : `/${idOf(r, ids.users)}`),
    weight: 4,
  },
  {
    method: 'POST',
    path: (r) =>
      pick(r, [
        '/admin/api/users',
        '/admin/api/backends',
        '/admin/api/backends/test',
        '/admin/api/users/1/rotate',
        '/admin/api/users/x/rotate',
        '/admin/api/backends/nope/reset',
        '/admin/api/backends/local/reset',
        '/admin/api/backends/nope/drain',
      ]),
    weight: 3,
    body: (r) => ({
      name: pick(r, ['u', 'nope', 'local']),
      url: pick(r, ['http://127.0.0.1:1', 'ftp://x', 'x']),
      type: pick(r, ['openai', 'x']),
      quota_usd_day: 1,
    }),
  },
  {
    method: 'PUT',
    path: (r) =>
      pick(r, [`/admin/api/settings/${pick(r, SETTINGS)}`, '/admin/api/ip-aliases', '/admin/api/backends/nope']),
    weight: 2,
    body: (r) => ({ value: oddValue(r) }),
  },
  {
    method: 'PATCH',
    path: (r, ids) => `/admin/api/users/${idOf(r, ids.users)}`,
    weight: 2,
    body: (r) => ({ enabled: oddValue(r), quota_usd_day: oddValue(r) }),
  },
  {
    method: 'DELETE',
    path: (r, ids) =>
      pick(r, [
        `/admin/api/users/${idOf(r, ids.users)}`,
        '/admin/api/settings/nope',
        `/admin/api/settings/${pick(r, SETTINGS)}`,
        '/admin/api/backends/nope',
      ]),
    weight: 1,
  },
  { method: 'GET', path: (r) => pick(r, UI_PATHS), weight: 4 },
  { method: 'POST', path: (r) => pick(r, UI_POSTS), weight: 3, form: true },
];

const TOTAL_WEIGHT = ROUTES.reduce((sum, r) => sum + r.weight, 0);
function pickRoute(rng: Rng): Route {
  let at = rng() * TOTAL_WEIGHT;
  for (const route of ROUTES) if ((at -= route.weight) < 0) return route;
  return ROUTES[0]!;
}

const ODD_METHODS = ['PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'GET', 'POST', 'PROPFIND', 'TRACE', 'SEARCH'];

type FormSpec = { fields: Record<string, string>; files: string[] };

function multipart(rng: Rng, spec: FormSpec): { body: Buffer; type: string } {
  const boundary = `----fuzz${int(rng, 0, 1e9)}`;
  const parts: Buffer[] = [];
  const fields = chance(rng, 0.3)
    ? { ...spec.fields, [pick(rng, ['model', 'n', 'x'.repeat(300), ''])]: String(oddValue(rng)) }
    : spec.fields;
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const name of spec.files) {
    const filename = pick(rng, ['a.png', 'a.wav', '', '../../x.png', 'a"b.png', 'x'.repeat(400)]);
    const type = pick(rng, ['image/png', 'audio/wav', 'application/octet-stream', 'text/plain', '']);
    const bytes = pick(rng, [
      Buffer.from('RIFF....WAVEfmt '),
      Buffer.from('\x89PNG\r\n\x1a\n'),
      Buffer.alloc(0),
      Buffer.alloc(int(rng, 1, 200_000), 7),
    ]);
    const disposition = filename === '' ? `name="${name}"` : `name="${name}"; filename="${filename}"`;
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; ${disposition}\r\n` +
          `${type ? `Content-Type: ${type}\r\n` : ''}\r\n`,
      ),
      bytes,
      Buffer.from('\r\n'),
    );
  }
  if (!chance(rng, 0.1)) parts.push(Buffer.from(`--${boundary}--\r\n`));
  const type = chance(rng, 0.1)
    ? pick(rng, ['multipart/form-data', `multipart/form-data; boundary="${boundary}x"`, 'multipart/mixed; boundary=x'])
    : `multipart/form-data; boundary=${boundary}`;
  return { body: Buffer.concat(parts), type };
}

function jsonBody(rng: Rng, base: Body): Buffer {
  const r = rng();
  const value = r < 0.15 ? base : mutateBody(rng, base);
  const text = JSON.stringify(value) ?? 'null';
  return Buffer.from(chance(rng, 0.3) ? mutateText(rng, text) : text);
}

function authHeaders(rng: Rng, gateway: FuzzGateway): Record<string, string> {
  const key = gateway.keys.length ? pick(rng, gateway.keys) : 'sk-anything';
  switch (int(rng, 0, 11)) {
    case 0:
      return {};
    case 1:
      return { authorization: 'Bearer' };
    case 2:
      return { authorization: `bearer ${key}` };
    case 3:
      return { authorization: `Basic ${Buffer.from(`x:${key}`).toString('base64')}` };
    case 4:
      return { 'x-api-key': key };
    case 5:
      return { authorization: `Bearer ${key} ${key}` };
    case 6:
      return { authorization: 'Bearer wrong-key', 'x-api-key': key };
    case 7:
      return { authorization: `Bearer ${'k'.repeat(8000)}` };
    default:
      return { authorization: `Bearer ${key}` };
  }
}

const ODD_HOSTS = ['evil.example', '', '127.0.0.1:1', '[::1]', 'localhost', 'a'.repeat(300)];
const ODD_ORIGINS = ['null', 'http://evil.example', 'http://127.0.0.1', 'x', 'http://localhost:4000'];

function oddHeaders(rng: Rng, headers: Record<string, string>): void {
  if (chance(rng, 0.1)) headers.host = pick(rng, ODD_HOSTS);
  if (chance(rng, 0.1)) headers.origin = pick(rng, ODD_ORIGINS);
  if (chance(rng, 0.25)) {
    const numbered = `r-${int(rng, 0, 50)}`;
    headers['x-request-id'] = pick(rng, ['dup-1', 'dup-2', 'a'.repeat(129), 'bad id!', '', 'ok.id:1', numbered]);
  }
  if (chance(rng, 0.2)) headers['anthropic-version'] = pick(rng, ['2023-06-01', '', 'x', '1999-01-01']);
  if (chance(rng, 0.05)) headers['anthropic-beta'] = pick(rng, ['oauth-2025-04-20', 'x,,y', '']);
  if (chance(rng, 0.05)) headers.accept = pick(rng, ['text/event-stream', 'text/html', '*/*', 'application/xml']);
  if (chance(rng, 0.05)) headers['x-forwarded-for'] = pick(rng, ['1.2.3.4', 'garbage', '::1, 8.8.8.8']);
  if (chance(rng, 0.03)) headers['x-forwarded-host'] = pick(rng, ['evil.example', 'localhost']);
  if (chance(rng, 0.02)) headers['x-big'] = 'a'.repeat(int(rng, 10_000, 40_000)); // past node's 16 KiB of headers: 431
  if (chance(rng, 0.03)) headers['content-length'] = pick(rng, ['-1', 'abc', '1e3', '99999999999']);
}

function encode(rng: Rng, body: Buffer, headers: Record<string, string>): Buffer {
  if (!chance(rng, 0.1)) return body;
  const encoding = pick(rng, ['gzip', 'gzip', 'br', 'deflate', 'identity', 'gzip, gzip', 'x-unknown', 'GZIP']);
  headers['content-encoding'] = encoding;
  if (encoding.toLowerCase() === 'gzip' && chance(rng, 0.7)) return gzipSync(body);
  return body;
}

const CONTENT_TYPES = [
  'text/plain',
  'application/json; charset=latin1',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'application/json, text/html',
  'application/vnd.api+json',
  'application/json;',
  'x'.repeat(500),
];

export function fuzzCase(rng: Rng, gateways: FuzzGateway[], ids: IdPool): FuzzCase {
  const gateway = pick(rng, gateways);
  const route = pickRoute(rng);
  let method = chance(rng, 0.06) ? pick(rng, ODD_METHODS) : route.method;
  const path = route.path(rng, ids);
  const headers: Record<string, string> = { ...authHeaders(rng, gateway) };
  let body: Buffer | undefined;
  if (route.body) {
    body = jsonBody(rng, route.body(rng));
    headers['content-type'] = chance(rng, 0.1) ? pick(rng, CONTENT_TYPES) : 'application/json';
  } else if (route.multipart) {
    const m = multipart(rng, route.multipart(rng));
    body = m.body;
    headers['content-type'] = chance(rng, 0.05) ? 'application/json' : m.type;
  } else if (route.form) {
    const form = new URLSearchParams({ alias: String(oddValue(rng)).slice(0, 300), name: 'x', value: '1' });
    body = Buffer.from(form.toString());
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  if (body) body = encode(rng, body, headers);
  if (method === 'GET' && chance(rng, 0.03)) body = Buffer.from('{"x":1}');
  if (method === 'HEAD' || method === 'TRACE') body = undefined;
  if (chance(rng, 0.02)) method = method.toLowerCase();
  oddHeaders(rng, headers);
  const truncate = !!body && body.length > 4 && chance(rng, 0.04);
  const hangUpAfterMs = !truncate && chance(rng, 0.06) ? int(rng, 0, 400) : undefined;
  return { gateway, method, path, headers, body, truncate, hangUpAfterMs, label: `${gateway.name} ${method} ${path}` };
}

/** A valid call that takes a slot (a stream, often), for bursts that fill the backends and park. */
export function slotCase(rng: Rng, gateways: FuzzGateway[]): FuzzCase {
  const gateway = pick(rng, gateways);
  const stream = chance(rng, 0.6);
  const [path, body] = pick(rng, [
    ['/v1/chat/completions', { model: pick(rng, FUZZ_MODELS.chat), messages: msgs(), max_tokens: 64, stream }],
    ['/v1/messages', { model: pick(rng, [...FUZZ_MODELS.anthropic, 'l']), max_tokens: 64, messages: msgs(), stream }],
    [
      '/v1/responses',
      {
        model: pick(rng, ['n', 'l']),
        input: 'hi',
        stream,
        ...(chance(rng, 0.2) ? { background: true } : {}),
      },
    ],
    ['/v1/images/generations', { model: 'sd15', prompt: 'a cat', n: 1 }],
  ] as const);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (gateway.keys.length) headers.authorization = `Bearer ${pick(rng, gateway.keys)}`;
  if (chance(rng, 0.3)) headers['x-request-id'] = `burst-${int(rng, 0, 30)}`;
  const hangUpAfterMs = chance(rng, 0.35) ? int(rng, 0, 300) : undefined;
  return {
    gateway,
    method: 'POST',
    path,
    headers,
    body: Buffer.from(JSON.stringify(body)),
    hangUpAfterMs,
    label: `${gateway.name} burst POST ${path}`,
  };
}
