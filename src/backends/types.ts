/** Live state of backends, as discovery and the request path see it. */

/** Prices in USD per million tokens. */
export interface ModelPricing {
  input: number;
  output: number;
  cache_read?: number;
  cache_write?: number;
}

export interface ModelInfo {
  /** The id the backend knows the model by. */
  id: string;
  /** The backend's own `created`, when it gave one (unix seconds). */
  created?: number;
  owned_by?: string;
  /** A name for people (Anthropic lists one). */
  display_name?: string;
  pricing?: ModelPricing;
  context_length?: number;
}

export type BackendErrorKind =
  'unreachable' | 'timeout' | 'auth' | 'not_found' | 'rate_limit' | 'upstream' | 'error' | 'exec_stuck';

export interface BackendError {
  kind: BackendErrorKind;
  status?: number;
  detail: string;
  /** Unix ms when this error was first seen (kept while the same kind repeats). */
  since: number;
}
