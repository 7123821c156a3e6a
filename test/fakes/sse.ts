/** Server-sent events as OpenAI-compatible servers frame them, and a strict reader for tests. */

/** One event: exactly `data: <json>\n\n`. */
export function sseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

export const SSE_DONE = 'data: [DONE]\n\n';

/** What a raw SSE body contains, read strictly: every event must be one `data: ` line. */
export interface ParsedSse {
  /** The `data:` payloads in order, `[DONE]` included as the string. */
  data: string[];
  /** Lines that are neither `data: …` nor the blank separator, with their index. */
  strayLines: { index: number; line: string }[];
  /** True when the body ends with a blank line after the last event. */
  endsWithBlankLine: boolean;
}

/** Splits a body into events at blank lines and reports anything that is not `data: ` framing. */
export function parseSse(body: string): ParsedSse {
  const data: string[] = [];
  const strayLines: { index: number; line: string }[] = [];
  const events = body.split('\n\n');
  const endsWithBlankLine = body.endsWith('\n\n');
  events.forEach((event, index) => {
    if (event === '' && index === events.length - 1) return;
    if (event.startsWith('data: ') && !event.includes('\n')) data.push(event.slice('data: '.length));
    else strayLines.push({ index, line: event });
  });
  return { data, strayLines, endsWithBlankLine };
}
