/**
 * The gateway's own headers on every proxied answer: who answered, the request id, the
 * reasoning switch as applied, and why the scheduler chose that backend (`x-gateway-route`,
 * `Lease.route`, e.g. `spill: local eta 41 s > 10 s`) when it was not simply the best free
 * unpaid one.
 */

/** `headers` (a fresh object) with the gateway's own added. */
export function withGatewayHeaders(
  headers: Record<string, string | string[]>,
  backend: string,
  requestId: string,
  reasoning?: string,
  route?: string,
): Record<string, string | string[]> {
  headers['x-gateway-backend'] = backend;
  headers['x-request-id'] = requestId;
  if (reasoning !== undefined) headers['x-reasoning-control'] = reasoning;
  if (route) headers['x-gateway-route'] = headerText(route);
  return headers;
}

export function gatewayHeaders(
  backend: string,
  requestId: string,
  reasoning?: string,
  route?: string,
): Record<string, string> {
  const headers: Record<string, string> = { 'x-gateway-backend': backend, 'x-request-id': requestId };
  if (reasoning !== undefined) headers['x-reasoning-control'] = reasoning;
  if (route) headers['x-gateway-route'] = headerText(route);
  return headers;
}

/** A header value Node writes as it is: printable ASCII only (a `≥` or a newline would throw or split the head). */
function headerText(text: string): string {
  return /^[\x20-\x7e]*$/.test(text) ? text : text.replace(/[^\x20-\x7e]/g, '?');
}
