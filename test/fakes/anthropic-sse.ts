/** A strict reader of Anthropic-framed server-sent events (`event: <type>` then `data: <json>`), for tests. */

export interface AnthropicSseEvent {
  /** The `event:` line's value. */
  event: string;
  /** The parsed `data:` payload. */
  data: any;
}

export interface ParsedAnthropicSse {
  events: AnthropicSseEvent[];
  /** Events that are not exactly one `event:` line and one JSON `data:` line, with their index. */
  strayLines: { index: number; text: string }[];
  /** True when the body ends with a blank line after the last event. */
  endsWithBlankLine: boolean;
}

export function parseAnthropicSse(body: string): ParsedAnthropicSse {
  const events: AnthropicSseEvent[] = [];
  const strayLines: { index: number; text: string }[] = [];
  const chunks = body.replace(/\r\n/g, '\n').split('\n\n');
  chunks.forEach((text, index) => {
    if (text === '' && index === chunks.length - 1) return;
    const m = /^event: ([^\n]+)\ndata: ([^\n]+)$/.exec(text);
    if (!m) {
      strayLines.push({ index, text });
      return;
    }
    try {
      events.push({ event: m[1]!, data: JSON.parse(m[2]!) });
    } catch {
      strayLines.push({ index, text });
    }
  });
  return { events, strayLines, endsWithBlankLine: body.endsWith('\n\n') };
}
