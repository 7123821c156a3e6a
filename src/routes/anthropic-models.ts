/**
 * `GET /v1/models` in Anthropic's shape, for the Anthropic SDKs and Claude Code (they send
 * `anthropic-version`): `{data:[{type:"model", id, display_name, created_at}], has_more,
 * first_id, last_id}`, paged by `limit` (default 20, at most 1000), `after_id` and `before_id`
 * as Anthropic's own list is. Their errors are Anthropic-shaped as well (error-handler.ts asks
 * `wantsAnthropicErrors`).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../errors.ts';
import type { ListingEntry } from '../routing/model-listing.ts';

export function wantsAnthropicShape(req: FastifyRequest): boolean {
  return req.headers['anthropic-version'] !== undefined;
}

/** The same callers get their errors (bad key, unknown model, bad `limit`) in Anthropic's shape too. */
export function wantsAnthropicErrors(url: string, headers: IncomingHttpHeaders | undefined): boolean {
  if (headers?.['anthropic-version'] === undefined) return false;
  const path = url.split('?')[0]!.replace(/\/{2,}/g, '/');
  return path === '/v1/models' || path.startsWith('/v1/models/');
}

export function anthropicModel(entry: ListingEntry) {
  const created = entry.model.created;
  return {
    type: 'model' as const,
    id: entry.model.id,
    display_name: entry.displayName ?? entry.model.id,
    created_at: new Date((created > 0 ? created : 0) * 1000).toISOString(),
  };
}

export function anthropicModelPage(entries: readonly ListingEntry[], query: Record<string, unknown>) {
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw badRequest('limit: must be an integer from 1 to 1000', 'limit');
  const ids = entries.map((e) => e.model.id);
  let start = 0;
  let end = entries.length;
  if (typeof query.after_id === 'string') start = ids.indexOf(query.after_id) + 1;
  if (typeof query.before_id === 'string') {
    end = Math.max(0, ids.indexOf(query.before_id));
    start = Math.max(start, end - limit);
  }
  const page = entries.slice(start, Math.min(end, start + limit)).map(anthropicModel);
  return {
    data: page,
    has_more: start + page.length < end,
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
  };
}
