/** Live state of backends, as discovery and the request path see it. */

export type { ModelInfo, ModelPricing } from '../config/model-info.ts';

export type BackendErrorKind =
  'unreachable' | 'timeout' | 'auth' | 'not_found' | 'rate_limit' | 'upstream' | 'error' | 'exec_stuck';

export interface BackendError {
  kind: BackendErrorKind;
  status?: number;
  detail: string;
  /** Unix ms when this error was first seen (kept while the same kind repeats). */
  since: number;
}
