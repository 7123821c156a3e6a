/**
 * The model gate of the OpenAI-shaped endpoints (chat, completions, embeddings, Responses,
 * speech): the requested model resolved for the caller's allow-list, re-resolvable while the
 * call is parked; a model outside the allow-list looks exactly like an unknown one. A model
 * only anthropic backends serve is the licence boundary: never answered here, and a caller
 * who may use it on /v1/messages is told to go there.
 */
import { filterAllowed } from '../auth/allow.ts';
import { GatewayError, modelNotFound } from '../errors.ts';
import type { ModelCatalogView } from '../routing/catalog.ts';
import type { Resolution } from '../routing/resolve.ts';

export interface GatedModel {
  resolution: Resolution;
  /** The candidates now, for a parked call. */
  refreshCandidates: () => Resolution['candidates'];
}

export function gateOpenAIModel(catalog: ModelCatalogView, model: string, allow: readonly string[]): GatedModel {
  const candidatesNow = (): Resolution | undefined => {
    const resolved = catalog.resolve(model, 'openai');
    return resolved
      ? { requested: resolved.requested, alias: resolved.alias, candidates: filterAllowed(allow, resolved) }
      : undefined;
  };
  const resolution = candidatesNow();
  if (!resolution?.candidates.length) throw messagesOnlyError(catalog, model, allow) ?? modelNotFound(model);
  return { resolution, refreshCandidates: () => candidatesNow()?.candidates ?? [] };
}

function messagesOnlyError(
  catalog: ModelCatalogView,
  model: string,
  allow: readonly string[],
): GatewayError | undefined {
  const there = catalog.resolve(model, 'messages');
  if (!there || !filterAllowed(allow, there).length) return undefined;
  return new GatewayError({
    status: 404,
    code: 'model_not_found',
    reason: 'messages_only',
    param: 'model',
    message: `The model \`${model}\` is served only through the Anthropic Messages API: send it to POST /v1/messages.`,
  });
}
