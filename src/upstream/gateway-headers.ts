/** The gateway's own headers on every proxied answer: who answered, the request id, and the reasoning switch as applied. */

/** `headers` (a fresh object) with the gateway's own added. */
export function withGatewayHeaders(headers: Record<string, string | string[]>, backend: string, requestId: string, reasoning?: string): Record<string, string | string[]> {
  headers['x-gateway-backend'] = backend;
  headers['x-request-id'] = requestId;
  if (reasoning !== undefined) headers['x-reasoning-control'] = reasoning;
  return headers;
}

export function gatewayHeaders(backend: string, requestId: string, reasoning?: string): Record<string, string> {
  const headers: Record<string, string> = { 'x-gateway-backend': backend, 'x-request-id': requestId };
  if (reasoning !== undefined) headers['x-reasoning-control'] = reasoning;
  return headers;
}
