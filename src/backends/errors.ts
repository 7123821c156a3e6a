import type { BackendError, BackendErrorKind } from './types.ts';

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
]);
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** Error kind for an HTTP status a backend answered with. */
export function kindForStatus(status: number): BackendErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limit';
  if (status >= 500) return 'upstream';
  return 'error';
}

/** Error kind for a thrown network error (undici / node codes). */
export function kindForError(err: unknown): BackendErrorKind {
  const code = errorCode(err);
  if (code && TIMEOUT_CODES.has(code)) return 'timeout';
  if (code && UNREACHABLE_CODES.has(code)) return 'unreachable';
  if ((err as Error)?.name === 'TimeoutError') return 'timeout';
  return 'error';
}

export function errorCode(err: unknown): string | undefined {
  const e = err as { code?: string; cause?: { code?: string } } | undefined;
  return e?.code ?? e?.cause?.code;
}

export function describeError(err: unknown): Omit<BackendError, 'since'> {
  const e = err as Error & { cause?: Error };
  const detail = [errorCode(err), e?.message, e?.cause?.message].filter(Boolean).join(': ');
  return { kind: kindForError(err), detail: detail || String(err) };
}
