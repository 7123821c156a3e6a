/**
 * Responses that a `responses: native` backend stored itself, under its own id: the gateway
 * remembers which backend made each one (per owner, for `responses_ttl_h`), and sends reads,
 * deletes and cancels of that id there; a create whose `previous_response_id` is such an id
 * is served by that backend only, which holds the conversation.
 */
import type { FastifyReply } from 'fastify';
import { mayAccess } from '../auth/owner.ts';
import { GatewayError } from '../errors.ts';
import type { GatedModel } from './model-gate.ts';
import type { NativeOrigin, ResponsesRepo } from '../store/responses-repo.ts';
import type { NativeReadBack, ReadBackMethod } from '../surfaces/responses-readback.ts';

/**
 * Whether `id` may be a response id: letters, digits, `_` and `-` (OpenAI's `resp_…`, vLLM's,
 * the gateway's own). Anything else (`/`, `.`, `%`, …) is refused before it is looked up or put
 * in a backend's URL, and a backend's id outside it is not remembered.
 */
export function isResponseId(id: unknown): id is string {
  return typeof id === 'string' && /^[A-Za-z0-9_-]{1,200}$/.test(id);
}

/**
 * The backend's path for a read of `id` (checked by `isResponseId`): built from the id, never the
 * client's raw path; the query is the client's, each parameter encoded again.
 */
export function nativePath(id: string, suffix: '' | '/input_items' | '/cancel', url: string): string {
  const at = url.indexOf('?');
  const query = at === -1 ? '' : new URLSearchParams(url.slice(at + 1)).toString();
  return `/v1/responses/${id}${suffix}${query ? `?${query}` : ''}`;
}

/** The native origin of `id` when the caller may see it (the owner, or an admin). */
export function visibleNative(
  repo: ResponsesRepo,
  id: string,
  owner: string,
  isAdmin: boolean,
  now: number,
): NativeOrigin | undefined {
  const origin = repo.nativeOrigin(id, now);
  return origin && mayAccess(origin.owner, owner, isAdmin) ? origin : undefined;
}

/** Sends the read to the backend that holds the response and relays its answer. */
export async function relayNative(
  reply: FastifyReply,
  readBack: NativeReadBack,
  origin: NativeOrigin,
  method: ReadBackMethod,
  path: string,
  id: string,
): Promise<FastifyReply> {
  const answer = await readBack.send(origin.backend, method, path, id);
  return reply
    .code(answer.status)
    .header('content-type', answer.contentType)
    .header('x-request-id', reply.request.id)
    .send(answer.body);
}

/** The gate narrowed to the backend that holds the previous response of a native chain. */
export function chainedTo(gated: GatedModel, origin: NativeOrigin, model: string, previous: string): GatedModel {
  const only = <T extends { backend: string }>(candidates: T[]) =>
    candidates.filter((c) => c.backend === origin.backend);
  const candidates = only(gated.resolution.candidates);
  if (!candidates.length) {
    throw new GatewayError({
      status: 400,
      code: 'previous_response_not_found',
      param: 'previous_response_id',
      message:
        `Previous response with id '${previous}' is held by a backend that does not serve \`${model}\`; ` +
        'continue it with the model that made it.',
    });
  }
  return { resolution: { ...gated.resolution, candidates }, refreshCandidates: () => only(gated.refreshCandidates()) };
}
