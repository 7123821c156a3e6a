/**
 * A body that failed its JSON schema, as a 400 naming the field: missing, unknown, or the
 * first invalid value (by its path, e.g. `allow[2]`).
 */
import type { FastifySchemaValidationError } from 'fastify';
import { badRequest, type GatewayError } from '../errors.ts';

export function schemaError(e: FastifySchemaValidationError): GatewayError {
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required') {
    const field = String(params.missingProperty);
    return badRequest(`Missing required field '${field}'.`, field, 'missing_field');
  }
  if (e.keyword === 'additionalProperties') {
    const field = String(params.additionalProperty);
    return badRequest(`Unknown field '${field}'.`, field, 'unknown_field');
  }
  const path = e.instancePath.split('/').slice(1).map(unescapePointer);
  if (path.length === 0) return badRequest(`The request body ${e.message ?? 'is invalid'}.`, null, 'invalid_body');
  const [field, ...rest] = path;
  const where = field + rest.map((p) => `[${p}]`).join('');
  return badRequest(`Invalid '${where}': ${e.message ?? 'invalid value'}.`, field, 'invalid_field');
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
