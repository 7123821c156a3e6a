/**
 * Responses SSE frames: `event: <type>\ndata: <json>\n\n`, the event name repeating the
 * payload's `type` (the SDKs read the payload, browsers' EventSource the name).
 *
 * Hot path: every streamed token becomes one delta frame. Those are assembled from constant
 * pieces around the one string that changes, so a token costs one JSON.stringify of its text
 * instead of one of an object; the bytes are the same as `responsesEvent` would give
 * (a test holds them to it). Item ids are the gateway's own hex ids: nothing to escape.
 */

/** One frame; `type` goes first in the payload, as the API writes it. No sequence number is added here. */
export function responsesEvent(type: string, payload: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify(Object.assign({ type }, payload, { type }))}\n\n`;
}

export type DeltaKind = 'text' | 'refusal' | 'arguments' | 'summary';

const TYPE: Record<DeltaKind, string> = {
  text: 'response.output_text.delta',
  refusal: 'response.refusal.delta',
  arguments: 'response.function_call_arguments.delta',
  summary: 'response.reasoning_summary_text.delta',
};

/**
 * The delta event of `kind` for the item `itemId` at `outputIndex` (content part or summary
 * part `partIndex`), fields in the order of the real API's events.
 */
export function deltaFrame(
  kind: DeltaKind,
  itemId: string,
  outputIndex: number,
  partIndex: number,
  delta: string,
  sequence: number,
): string {
  const head = `event: ${TYPE[kind]}\ndata: {"type":"${TYPE[kind]}",`;
  const text = JSON.stringify(delta);
  switch (kind) {
    case 'text':
      return (
        `${head}"content_index":${partIndex},"delta":${text},"item_id":"${itemId}","logprobs":[],` +
        `"output_index":${outputIndex},"sequence_number":${sequence}}\n\n`
      );
    case 'refusal':
      return (
        `${head}"content_index":${partIndex},"delta":${text},"item_id":"${itemId}",` +
        `"output_index":${outputIndex},"sequence_number":${sequence}}\n\n`
      );
    case 'arguments':
      return (
        `${head}"delta":${text},"item_id":"${itemId}",` +
        `"output_index":${outputIndex},"sequence_number":${sequence}}\n\n`
      );
    case 'summary':
      return (
        `${head}"delta":${text},"item_id":"${itemId}",` +
        `"output_index":${outputIndex},"sequence_number":${sequence},"summary_index":${partIndex}}\n\n`
      );
  }
}
