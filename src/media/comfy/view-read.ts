/** A file ComfyUI serves (`GET /view`), read whole into a Buffer within a byte limit. */
import type { Dispatcher } from 'undici';
import { describeError } from '../../backends/errors.ts';
import type { ViewResult } from './answers.ts';

/** The answer to a `/view` of `filename`: its bytes, or why not (a status, the limit, a broken body). */
export async function readViewBody(res: Dispatcher.ResponseData, limit: number, filename: string): Promise<ViewResult> {
  try {
    if (res.statusCode !== 200)
      return {
        ok: false,
        status: res.statusCode,
        error: `view answered ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`,
      };
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      discard(res.body);
      return {
        ok: false,
        status: 200,
        error: `file ${filename} is ${declared} bytes, over the ${limit} byte limit`,
      };
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        discard(res.body);
        return { ok: false, status: 200, error: `file ${filename} is over the ${limit} byte limit` };
      }
      chunks.push(chunk as Buffer);
    }
    return {
      ok: true,
      bytes: Buffer.concat(chunks, size),
      contentType: String(res.headers['content-type'] ?? 'application/octet-stream'),
    };
  } catch (err) {
    discard(res.body);
    return { ok: false, error: describeError(err).detail };
  }
}

/** Drops an unread body (destroy() alone emits an error nobody listens to). */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}
