/**
 * Anthropic's SSE frames: `event: <type>\ndata: <json>\n\n`, the event name repeating the
 * payload's `type` (the SDKs read either).
 *
 * Hot path: every streamed token becomes one delta frame. Those are assembled from constant
 * prefixes around the one string that changes, so a token costs one JSON.stringify of its
 * text instead of one of a nested object.
 */

/** One SSE frame. */
export function anthropicEvent(type: string, payload: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(payload)}\n\n`;
}

/** The `error` event that ends a stream that broke; the SDKs raise it as an APIError of that type. */
export function anthropicErrorEvent(type: string, message: string): string {
  return anthropicEvent('error', { type: 'error', error: { type, message } });
}

export type DeltaKind = 'text_delta' | 'thinking_delta' | 'input_json_delta' | 'signature_delta';

/** The field each delta kind carries its fragment in. */
const DELTA_FIELD: Record<DeltaKind, string> = {
  text_delta: 'text',
  thinking_delta: 'thinking',
  input_json_delta: 'partial_json',
  signature_delta: 'signature',
};

const DELTA_HEAD = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":';

/** `content_block_delta` for block `index`, byte for byte what anthropicEvent would give. */
export function deltaFrame(index: number, kind: DeltaKind, fragment: string): string {
  return `${DELTA_HEAD}${index},"delta":{"type":"${kind}","${DELTA_FIELD[kind]}":${JSON.stringify(fragment)}}}\n\n`;
}

export function blockStopFrame(index: number): string {
  return `event: content_block_stop\ndata: {"type":"content_block_stop","index":${index}}\n\n`;
}

export const MESSAGE_STOP_FRAME = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';
