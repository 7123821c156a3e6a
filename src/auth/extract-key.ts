/** The key a client sent with its request, read from its headers. */

export type HeaderBag = Record<string, string | string[] | undefined>;

/** The key a client sent: `Authorization: Bearer <key>` (preferred) or `x-api-key: <key>`. */
export function extractKey(headers: HeaderBag): string | undefined {
  const authorization = firstValue(headers.authorization);
  const bearer = authorization?.match(/^\s*Bearer\s+(\S.*?)\s*$/i)?.[1];
  if (bearer) return bearer;
  const apiKey = firstValue(headers['x-api-key'])?.trim();
  return apiKey || undefined;
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
