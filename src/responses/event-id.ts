/**
 * One id per response: a background run's events, relayed from a native backend, carry the
 * backend's own response id in their `response` object (`response.created`, `.in_progress`,
 * `.completed`, …), while the client was given the gateway's id at create and polls with it.
 * Such a frame is written again under the gateway's id; any other frame (deltas, items: they
 * carry item ids only) keeps its bytes.
 */
import { formatSseEvent, type SseEvent } from '../wire/sse.ts';

export interface OwnFrame {
  frame: string;
  /** The event's parsed payload, when it was parsed (lifecycle and error events). */
  payload?: Record<string, unknown>;
}

export function withResponseId(ev: SseEvent, id: string): OwnFrame {
  const frame = ev.raw.toString('utf8');
  if (ev.event?.endsWith('.delta')) return { frame };
  let payload: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(ev.data);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { frame };
    payload = parsed as Record<string, unknown>;
  } catch {
    return { frame };
  }
  const response = payload.response as Record<string, unknown> | undefined;
  if (!response || typeof response !== 'object' || response.id === id) return { frame, payload };
  const own = Object.assign({}, payload, { response: Object.assign({}, response, { id }) });
  return { frame: formatSseEvent(ev.event ?? 'message', JSON.stringify(own)), payload: own };
}
