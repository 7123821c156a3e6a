/**
 * A captured body as the call detail shows it: pretty JSON, a server-sent event stream as its
 * list of events (with the text it streamed), plain text, or "binary". The cap's truncation
 * marker is taken off and reported. Output is plain data; the template escapes it. Pure.
 */

/** Bodies bigger than this (pretty-printed) start collapsed. */
export const COLLAPSE_CHARS = 6_000;
/** Events listed one by one; the rest are counted (the raw stream is still there). */
export const MAX_EVENTS = 400;

export interface SseEvent {
  /** `event:` field, if any. */
  event: string | null;
  /** The data, pretty when it is JSON (compact: one event a line), else as sent. */
  data: string;
  json: boolean;
}

export type BodyView =
  | { kind: 'none' }
  | { kind: 'binary'; bytes: number; stored: number; truncatedFrom: number | null }
  | {
      kind: 'json' | 'text' | 'sse';
      /** The text shown (pretty JSON, or as stored). */
      text: string;
      /** Bytes of the body as the call had it (before the cap). */
      bytes: number;
      lines: number;
      /** The body was longer than the cap: its size then. */
      truncatedFrom: number | null;
      collapsed: boolean;
      events?: SseEvent[];
      /** Events past `MAX_EVENTS`. */
      moreEvents?: number;
      /** What a chat/messages stream said, put together from its deltas (null when it says nothing). */
      streamed?: string | null;
    };

const MARKER = /\n…\[truncated by llm-gateway: body was (\d+) bytes\]$/;

export function bodyView(body: Buffer | null, bytesBefore: number | null): BodyView {
  if (!body) return { kind: 'none' };
  let text = body.toString('utf8');
  let truncatedFrom: number | null = null;
  const marker = MARKER.exec(text);
  if (marker) {
    truncatedFrom = Number(marker[1]);
    text = text.slice(0, marker.index);
  }
  const bytes = bytesBefore ?? truncatedFrom ?? body.length;
  if (looksBinary(text)) return { kind: 'binary', bytes, stored: body.length, truncatedFrom };
  const shown = (kind: 'json' | 'text' | 'sse', t: string, extra: Partial<BodyView> = {}): BodyView =>
    ({
      kind,
      text: t,
      bytes,
      lines: countLines(t),
      truncatedFrom,
      collapsed: t.length > COLLAPSE_CHARS,
      ...extra,
    }) as BodyView;
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return shown('json', JSON.stringify(JSON.parse(text), null, 2));
    } catch {
      return shown('text', text); // cut by the cap, or not JSON after all
    }
  }
  if (/^(?:event|data|id|retry):|^:/m.test(trimmed.slice(0, 200)) && /^(?:event|data):/m.test(text)) {
    const all = parseSse(text);
    return shown('sse', text, {
      events: all.slice(0, MAX_EVENTS),
      moreEvents: Math.max(0, all.length - MAX_EVENTS),
      streamed: streamedText(all),
      collapsed: true,
    });
  }
  return shown('text', text);
}

/** Events of an SSE body: blank-line separated, `data:` lines joined, comments skipped. */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(':') || line === '') continue;
      const at = line.indexOf(':');
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (event === null && data.length === 0) continue;
    const joined = data.join('\n');
    const parsed = tryJson(joined);
    events.push(
      parsed === undefined ? { event, data: joined, json: false } : { event, data: JSON.stringify(parsed), json: true },
    );
  }
  return events;
}

/**
 * The text a stream delivered: OpenAI chat (`choices[0].delta.content`), completions
 * (`choices[0].text`), Anthropic (`content_block_delta` text), Responses (`output_text.delta`).
 */
function streamedText(events: SseEvent[]): string | null {
  let out = '';
  let any = false;
  for (const e of events) {
    if (!e.json) continue;
    const v = JSON.parse(e.data) as Record<string, unknown>;
    const piece = deltaText(v);
    if (typeof piece === 'string') {
      out += piece;
      any = true;
    }
  }
  return any ? out : null;
}

function deltaText(v: Record<string, unknown>): unknown {
  const choices = v.choices;
  if (Array.isArray(choices) && choices[0] && typeof choices[0] === 'object') {
    const c = choices[0] as Record<string, unknown>;
    const delta = c.delta as Record<string, unknown> | undefined;
    return delta && typeof delta.content === 'string' ? delta.content : c.text;
  }
  if (v.type === 'content_block_delta' && v.delta && typeof v.delta === 'object')
    return (v.delta as Record<string, unknown>).text;
  if (v.type === 'response.output_text.delta') return v.delta;
  return undefined;
}

function tryJson(s: string): unknown {
  const t = s.trimStart();
  if (!t.startsWith('{') && !t.startsWith('[')) return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

function countLines(s: string): number {
  let n = 1;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

/** Control characters (other than whitespace) or replacement characters in the first 4 KiB: not text. */
function looksBinary(text: string): boolean {
  const head = text.slice(0, 4096);
  let odd = 0;
  for (let i = 0; i < head.length; i++) {
    const c = head.charCodeAt(i);
    if ((c < 32 && c !== 9 && c !== 10 && c !== 13) || c === 0xfffd) odd++;
  }
  return odd > Math.max(2, head.length / 100);
}
