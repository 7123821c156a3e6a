/**
 * `GET /v1/responses/{id}?stream=true` (and `background: true, stream: true`): a background
 * response's events from after `starting_after` (a sequence number), the ones so far at once,
 * then each as it comes until the run ends; a finished run replays its stored events and ends.
 */
import type { FastifyReply } from 'fastify';
import { GatewayError } from '../errors.ts';
import type { BackgroundResponses } from '../responses/background.ts';
import type { StoredResponse } from '../store/responses-repo.ts';
import { SseSplitter } from '../wire/sse.ts';

const SEQUENCE = /"sequence_number"\s*:\s*(\d+)/;
/** Most bytes kept waiting for a follower that does not read. */
const FOLLOWER_BUFFER_BYTES = 8 * 1024 * 1024;

export function followStored(
  reply: FastifyReply,
  row: StoredResponse,
  background: BackgroundResponses,
  startingAfter: number,
): FastifyReply {
  if (!row.background) {
    throw new GatewayError({
      status: 400,
      code: 'invalid_request',
      param: 'stream',
      message: 'Only responses created with background=true can be streamed after they were created.',
    });
  }
  const after = Number.isFinite(startingAfter) ? startingAfter : -1;
  const wanted = (frame: string) => after < 0 || Number(SEQUENCE.exec(frame)?.[1] ?? Infinity) > after;
  const res = reply.raw;
  reply.hijack();
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    'x-request-id': String(reply.request.id),
  });
  const write = (frame: string | null) => {
    if (res.destroyed || res.writableEnded) return;
    if (frame === null) res.end();
    else if (wanted(frame)) res.write(frame);
    // a follower that stopped reading is dropped rather than buffered without end
    if (res.writableLength > FOLLOWER_BUFFER_BYTES) res.destroy();
  };
  const live = background.follow(row.id, write);
  if (!live) {
    for (const frame of storedFrames(row.events)) write(frame);
    res.end();
    return reply;
  }
  for (const frame of live.frames) write(frame);
  res.once('close', live.stop);
  return reply;
}

function storedFrames(events: string | null): string[] {
  if (!events) return [];
  const splitter = new SseSplitter();
  const frames = [...splitter.push(Buffer.from(events)), ...splitter.flush()];
  return frames.filter((ev) => ev.data).map((ev) => ev.raw.toString('utf8'));
}
