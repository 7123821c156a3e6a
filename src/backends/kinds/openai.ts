/**
 * `type: openai`: every OpenAI-compatible server — llama.cpp, llama-swap, vLLM, LM Studio, and
 * the paid APIs (OpenRouter, Together, OpenAI). The key goes as a bearer token; chat,
 * completions, embeddings and audio are passed through as sent, the Responses API too when the
 * spec says `responses: native`, and Anthropic's Messages, Ollama's native API (and Responses
 * otherwise) are translated to chat completions.
 */
import { DEFAULT_RESIDENT } from '../../config/defaults.ts';
import type { BackendKind, CredentialSpec } from './types.ts';

/** llama.cpp answers 503 "Loading model" until the model is in memory: not a broken backend. */
export const LOADING_MODEL = /loading model/i;
/**
 * llama-swap answers 502 "unable to start process" when the model it was asked to swap in fails
 * to start: the backend's failure for that call, worth failing over.
 */
export const START_FAILURE = /unable to start process/i;

/** `Authorization: Bearer <api_key>`, the OpenAI convention every compatible server follows. */
export function bearer(spec: CredentialSpec): Record<string, string> {
  return spec.api_key ? { authorization: `Bearer ${spec.api_key}` } : {};
}

export const openaiKind: BackendKind = {
  type: 'openai',
  isMedia: false,
  probe: { path: '/v1/models', reads: 'model-list' },
  native: ['chat', 'completions', 'embeddings', 'audio'],
  nativeOnRequest: ['responses'],
  translated: ['messages', 'responses', 'ollama'],
  authHeaders: bearer,
  ownHeaders: () => ({}),
  basicFromUrl: true,
  defaults: { resident: DEFAULT_RESIDENT },
  pricedPerToken: true,
  hasAuthMode: false,
  translatesCacheControl: true,
  // llama-swap, LM Studio and vLLM say what they are in owned_by, or answer their own paths
  residency: 'owned-by',
  // llama-swap unloads its models when the card goes to media work
  groupSwitch: 'unload_llm',
  loadAnswers: [START_FAILURE, LOADING_MODEL],
};
