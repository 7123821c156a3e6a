/**
 * A request SHAPED like the first `POST /v1/messages` that the Claude Code CLI (2.1.197) sends
 * to a custom ANTHROPIC_BASE_URL for `claude -p "say hi"` in a fresh HOME, a non-git working
 * directory, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, x-api-key auth. Observed with a capture
 * server; every text here is made up (none of the CLI's prompt or tool text is copied), only the
 * structure, the header names and values that identify the CLI, the beta list and the sizes follow
 * the real request:
 *
 * - path `/v1/messages?beta=true` (always the `?beta=true` query);
 * - headers: the Stainless SDK set plus anthropic-beta / anthropic-version / x-app / session id;
 *   auth is `x-api-key` (ANTHROPIC_API_KEY) — with ANTHROPIC_AUTH_TOKEN the CLI sends
 *   `authorization: Bearer <token>` instead (both when both are set). Transport headers (host,
 *   connection, content-length, accept-encoding "gzip, deflate, br, zstd") are left to the client.
 *   The CLI sends the names in mixed case (Accept, User-Agent, X-Stainless-*) — given lowercase here;
 * - body keys in the CLI's order: model, messages, system, tools, metadata, max_tokens, thinking,
 *   context_management, output_config, stream; no temperature / top_p / tool_choice;
 * - system: 3 text blocks — a billing-header line (no cache_control), a one-line identity block and
 *   the main prompt, both with cache_control {type:"ephemeral"};
 * - tools: 24 client tools, each exactly {name, description, input_schema}, JSON Schema draft
 *   2020-12 with additionalProperties:false, no cache_control on tools;
 * - messages: one user message with two text blocks (a reminder block, then the prompt carrying
 *   cache_control) followed by a `role:"system"` message with string content
 *   (beta mid-conversation-system-2026-04-07);
 * - JSON.stringify(body) is ~76.3 kB like the real one (76,304 bytes).
 *
 * `model` omitted = the CLI's default (claude-opus-4-8 with the 1M-context beta, max_tokens 64000);
 * any explicit model = what `--model <alias>` / ANTHROPIC_MODEL produce for a name the CLI does not
 * know: no context-1m beta, max_tokens 32000, everything else identical.
 * `stream: false` = the CLI's own non-streaming fallback (it retries once without streaming when a
 * streamed attempt fails): the `stream` key is omitted and x-stainless-timeout is 300, not 600.
 *
 * Pure: the same options always give the same request.
 */

const CLI_VERSION = '2.1.197';
const DEFAULT_MODEL = 'claude-opus-4-8';
const SESSION_ID = '0b7e2c1a-5d4f-4e8a-9c3b-7f1d2e6a8b90';
const DEVICE_ID = '5f3a9c0e1b2d4f6a8c7e9b1d3f5a7c9e0b2d4f6a8c1e3b5d7f9a2c4e6b8d0f1a';

const BETAS_DEFAULT = [
  'claude-code-20250219',
  'context-1m-2025-08-07',
  'interleaved-thinking-2025-05-14',
  'thinking-token-count-2026-05-13',
  'context-management-2025-06-27',
  'prompt-caching-scope-2026-01-05',
  'mid-conversation-system-2026-04-07',
  'effort-2025-11-24',
];

const WORDS = [
  'gateway',
  'widget',
  'harness',
  'ledger',
  'relay',
  'bucket',
  'sample',
  'record',
  'window',
  'queue',
  'fixture',
  'probe',
  'cursor',
  'packet',
  'marker',
  'signal',
  'batch',
  'column',
  'token',
  'shard',
  'the',
  'a',
  'each',
  'when',
  'then',
  'only',
  'never',
  'always',
  'before',
  'after',
  'with',
  'from',
  'checks',
  'writes',
  'reads',
  'keeps',
  'drops',
  'moves',
  'counts',
  'lists',
  'waits',
  'returns',
];

/** Deterministic made-up prose of exactly `len` characters. */
function filler(len: number, seed: number): string {
  if (len <= 0) return '';
  let s = seed >>> 0;
  const next = (): number => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s >>> 8;
  };
  let out = '';
  let inSentence = 0;
  while (out.length < len + 1) {
    let w = WORDS[next() % WORDS.length];
    if (inSentence === 0) w = w[0].toUpperCase() + w.slice(1);
    inSentence++;
    out += w;
    if (inSentence > 6 && next() % 5 === 0) {
      out += next() % 9 === 0 ? '.\n\n' : '. ';
      inSentence = 0;
    } else out += ' ';
  }
  return len === 1
    ? '.'
    : out
        .slice(0, len - 1)
        .trimEnd()
        .padEnd(len - 1, 'x') + '.';
}

type Json = Record<string, unknown>;

const SCHEMA_URI = 'https://json-schema.org/draft/2020-12/schema';
const MAX_SAFE = 9007199254740991;

let propSeed = 1;
const str = (d: number, extra: Json = {}): Json => ({ description: filler(d, propSeed++), type: 'string', ...extra });
const num = (d: number): Json => ({ description: filler(d, propSeed++), type: 'number' });
const bool = (d: number): Json => ({ description: filler(d, propSeed++), type: 'boolean' });
const int = (d: number, extra: Json = {}): Json => ({ description: filler(d, propSeed++), type: 'integer', ...extra });
const en = (d: number, values: string[]): Json => ({
  description: filler(d, propSeed++),
  type: 'string',
  enum: values,
});
const strArr = (d: number): Json => ({ description: filler(d, propSeed++), type: 'array', items: { type: 'string' } });
const freeObj = (d: number): Json => ({
  description: filler(d, propSeed++),
  type: 'object',
  propertyNames: { type: 'string' },
  additionalProperties: {},
});

function schema(properties: Json, required?: string[]): Json {
  return required
    ? { $schema: SCHEMA_URI, type: 'object', properties, required, additionalProperties: false }
    : { $schema: SCHEMA_URI, type: 'object', properties, additionalProperties: false };
}

/** [made-up name, JSON.stringify size of the real tool in that slot, schema]. */
const TOOL_SPECS: Array<[string, number, () => Json]> = [
  [
    'Delegate',
    2507,
    () =>
      schema(
        {
          description: str(42),
          prompt: str(33),
          profile: str(50),
          tier: en(254, ['small', 'medium', 'large', 'xl']),
          background: bool(88),
          sandbox: en(221, ['copy', 'remote']),
        },
        ['description', 'prompt'],
      ),
  ],
  [
    'Shell',
    2690,
    () =>
      schema(
        {
          cmd: str(22),
          timeout: num(45),
          label: str(757),
          background: bool(50),
          unsafe: bool(90),
        },
        ['cmd'],
      ),
  ],
  [
    'TimerAdd',
    4053,
    () =>
      schema({ schedule: str(260), prompt: str(90), repeat: bool(240), persist: bool(200) }, ['schedule', 'prompt']),
  ],
  ['TimerRemove', 427, () => schema({ id: str(40) }, ['id'])],
  ['TimerList', 277, () => schema({})],
  [
    'Patch',
    966,
    () => schema({ path: str(40), find: str(30), replace: str(60), all: bool(50) }, ['path', 'find', 'replace']),
  ],
  ['SandboxEnter', 3761, () => schema({ name: str(280), path: str(200) })],
  ['SandboxLeave', 2511, () => schema({ action: en(190, ['keep', 'remove']), discard: bool(170) }, ['action'])],
  [
    'CellEdit',
    1627,
    () =>
      schema(
        {
          notebook: str(110),
          cell: str(140),
          source: str(30),
          kind: en(90, ['code', 'markdown']),
          mode: en(120, ['replace', 'insert', 'delete']),
        },
        ['notebook', 'source'],
      ),
  ],
  [
    'ViewFile',
    1640,
    () =>
      schema(
        {
          path: str(34),
          start: int(88, { minimum: 0, maximum: MAX_SAFE }),
          count: int(89, { exclusiveMinimum: 0, maximum: MAX_SAFE }),
          range: str(118),
        },
        ['path'],
      ),
  ],
  [
    'FileReport',
    1838,
    () =>
      schema(
        {
          severity: en(30, ['low', 'medium', 'high', 'xhigh', 'max']),
          items: {
            description: filler(60, propSeed++),
            maxItems: 32,
            type: 'array',
            items: {
              type: 'object',
              properties: {
                file: str(48),
                line: int(37, { minimum: -MAX_SAFE, maximum: MAX_SAFE }),
                summary: str(36),
                scenario: str(42),
                verdict: en(57, ['CONFIRMED', 'PLAUSIBLE']),
                outcome: en(78, ['fixed', 'skipped', 'no_change_needed']),
              },
              required: ['file', 'summary', 'scenario'],
              additionalProperties: false,
            },
          },
        },
        ['items'],
      ),
  ],
  [
    'WakeLater',
    3718,
    () => schema({ delay: num(250), reason: str(160), prompt: str(180) }, ['delay', 'reason', 'prompt']),
  ],
  ['Notify', 1169, () => schema({ to: str(120), summary: str(90), message: str(70) }, ['to', 'message'])],
  ['Playbook', 2112, () => schema({ playbook: str(80), args: str(50) }, ['playbook'])],
  [
    'TicketNew',
    2816,
    () =>
      schema({ subject: str(26), details: str(21), progressLabel: str(81), extra: freeObj(40) }, [
        'subject',
        'details',
      ]),
  ],
  ['TicketShow', 1018, () => schema({ ticketId: str(30) }, ['ticketId'])],
  ['TicketList', 1189, () => schema({})],
  [
    'JobOutput',
    1552,
    () => schema({ job_id: str(40), wait: bool(60), timeout: num(70) }, ['job_id', 'wait', 'timeout']),
  ],
  ['JobCancel', 537, () => schema({ job_id: str(40), shell_ref: str(60) })],
  [
    'TicketChange',
    3514,
    () =>
      schema(
        {
          ticketId: str(28),
          subject: str(24),
          details: str(28),
          progressLabel: str(81),
          state: {
            description: filler(23, propSeed++),
            anyOf: [
              { type: 'string', enum: ['pending', 'in_progress', 'completed'] },
              { type: 'string', const: 'deleted' },
            ],
          },
          blocks: strArr(30),
          blockedBy: strArr(29),
          assignee: str(22),
          extra: freeObj(69),
        },
        ['ticketId'],
      ),
  ],
  ['UrlGet', 747, () => schema({ url: str(30, { format: 'uri' }), question: str(40) }, ['url', 'question'])],
  [
    'NetLookup',
    840,
    () => schema({ query: str(30, { minLength: 2 }), allow: strArr(60), deny: strArr(60) }, ['query']),
  ],
  [
    'Pipeline',
    21010,
    () =>
      schema({
        script: str(207, { maxLength: 524288 }),
        name: str(105),
        description: str(68),
        title: str(62),
        args: { description: filler(280, propSeed++) },
        scriptPath: str(329),
        resumeFrom: str(251, { pattern: '^wf_[a-z0-9-]{6,}$' }),
      }),
  ],
  ['SaveFile', 639, () => schema({ path: str(40), content: str(30) }, ['path', 'content'])],
];

/** Made-up text whose length is chosen so that JSON.stringify(make(text)) is `target` bytes. */
function fitted<T>(target: number, seed: number, make: (text: string) => T): T {
  let n = Math.max(1, target - JSON.stringify(make('')).length);
  let out = make(filler(n, seed));
  for (let i = 0; i < 8; i++) {
    const diff = target - JSON.stringify(out).length;
    if (diff === 0) break;
    n = Math.max(1, n + diff);
    out = make(filler(n, seed));
  }
  return out;
}

function buildTools(): Json[] {
  propSeed = 1;
  return TOOL_SPECS.map(([name, size, mk], i) => {
    const input_schema = mk();
    return fitted(size, 1000 + i, (description) => ({ name, description, input_schema }));
  });
}

/** A `role:"system"` message listing made-up helper profiles, JSON.stringify size `target`. */
function profileMessage(target: number): Json {
  const head = 'Helper profiles the Delegate tool can start:\n';
  const lines: string[] = [];
  for (let i = 0; i < 40; i++) {
    lines.push(
      `- profile-${i}: ${filler(90 + ((i * 37) % 120), 500 + i)} (Tools: ${i % 3 === 0 ? '*' : 'ViewFile, Shell'})`,
    );
  }
  const full = head + lines.join('\n');
  let len = target;
  let msg: Json = { role: 'system', content: full.slice(0, len) };
  for (let i = 0; i < 8; i++) {
    const diff = target - JSON.stringify(msg).length;
    if (diff === 0) break;
    len += diff;
    msg = { role: 'system', content: full.slice(0, len).trimEnd() };
  }
  return msg;
}

export function claudeCodeShapedRequest(opts?: { model?: string; stream?: boolean }): {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
} {
  const explicitModel = opts?.model !== undefined;
  const model = opts?.model ?? DEFAULT_MODEL;
  const stream = opts?.stream ?? true;
  const betas = explicitModel ? BETAS_DEFAULT.filter((b) => !b.startsWith('context-1m-')) : BETAS_DEFAULT;

  const headers: Record<string, string> = {
    accept: 'application/json',
    'content-type': 'application/json',
    'user-agent': `claude-cli/${CLI_VERSION} (external, sdk-cli)`,
    'x-claude-code-session-id': SESSION_ID,
    'x-stainless-arch': 'x64',
    'x-stainless-lang': 'js',
    'x-stainless-os': 'Linux',
    'x-stainless-package-version': '0.94.0',
    'x-stainless-retry-count': '0',
    'x-stainless-runtime': 'node',
    'x-stainless-runtime-version': 'v26.3.0',
    'x-stainless-timeout': stream ? '600' : '300',
    'anthropic-beta': betas.join(','),
    'anthropic-dangerous-direct-browser-access': 'true',
    'anthropic-version': '2023-06-01',
    'x-api-key': 'sk-test-claude-code-shaped',
    'x-app': 'cli',
  };

  const messages: Json[] = [
    fitted(436, 7, (t) => ({
      role: 'user',
      content: [
        {
          type: 'text',
          text: `<reminder>\nContext for this session:\n# date\nThe date is 2030-01-01.\n\n${t}\n</reminder>\n\n`,
        },
        { type: 'text', text: 'say hi', cache_control: { type: 'ephemeral' } },
      ],
    })),
    profileMessage(6183),
  ];

  const system: Json[] = [
    // The CLI's first block is a billing line of this exact form (the 3-hex suffix varies with the prompt).
    { type: 'text', text: `x-anthropic-billing-header: cc_version=${CLI_VERSION}.a1b; cc_entrypoint=sdk-cli;` },
    fitted(124, 3, (text) => ({ type: 'text', text, cache_control: { type: 'ephemeral' } })),
    fitted(5847, 4, (text) => ({ type: 'text', text: '\n' + text, cache_control: { type: 'ephemeral' } })),
  ];

  const body: Record<string, unknown> = {
    model,
    messages,
    system,
    tools: buildTools(),
    metadata: {
      user_id: JSON.stringify({ device_id: DEVICE_ID, account_uuid: '', session_id: SESSION_ID }),
    },
    max_tokens: explicitModel ? 32000 : 64000,
    thinking: { type: 'adaptive' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'high' },
  };
  if (stream) body.stream = true;

  return { path: '/v1/messages?beta=true', headers, body };
}
