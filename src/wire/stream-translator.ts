import type { SseEvent } from './sse.ts';
import type { StreamSummary } from './stream-summary.ts';

/** One upstream event stream made into the client's: the OpenAI usage tap is one. */
export interface StreamTranslator {
  /** Bytes to write for this upstream event (its own bytes when passed through), or null. */
  onEvent(ev: SseEvent): Buffer | null;
  /** The upstream's end marker went by: later events are ignored. */
  readonly ended: boolean;
  /** The stream stopped without its end marker yet had finished its answer (a finish reason). */
  finishedWithoutMarker(): boolean;
  /** Bytes that end a stream which finished without its end marker (a bridge closes its message). */
  end?(): Buffer | null;
  /** For a stream that broke: what closes the client's open parts before the error event. */
  abortFrames?(): string;
  /**
   * For a stream that broke: its whole last word, in place of `abortFrames()` + the surface's
   * error event (a Responses stream ends with `response.failed`, numbered in sequence).
   */
  failureFrames?(message: string): string;
  /**
   * The upstream reported an error inside the stream (Anthropic's `event: error`, a chat
   * backend's `data: {"error":…}` under a bridge): the call failed. `delivered` says whether
   * the client got the backend's own event; if not, the relay ends the stream with its own.
   */
  inBandError?(): { detail: string; delivered: boolean } | undefined;
  summary(): StreamSummary;
}
