/** A URL's userinfo (`user:password@`), taken apart and put back: the store keeps it encrypted apart from the URL. */

/** The URL without its userinfo, and the userinfo (`user:password`, URL-encoded) when there was one. */
export function splitUserinfo(url: string): { url: string; userinfo?: string } {
  const parsed = parseUrl(url);
  if (!parsed || (!parsed.username && !parsed.password)) return { url };
  const userinfo = `${parsed.username}${parsed.password ? `:${parsed.password}` : ''}`;
  parsed.username = '';
  parsed.password = '';
  return { url: serialise(parsed, url), userinfo };
}

export function joinUserinfo(url: string, userinfo: string | undefined): string {
  const parsed = userinfo ? parseUrl(url) : undefined;
  if (!parsed || !userinfo) return url;
  const colon = userinfo.indexOf(':');
  parsed.username = colon === -1 ? userinfo : userinfo.slice(0, colon);
  if (colon !== -1) parsed.password = userinfo.slice(colon + 1);
  return serialise(parsed, url);
}

/** The URL's text, without the `/` WHATWG adds to a bare origin when the original had none. */
export function serialise(parsed: URL, original: string): string {
  const href = parsed.href;
  const bareOrigin = parsed.pathname === '/' && !parsed.search && !parsed.hash;
  return bareOrigin && !original.endsWith('/') ? href.slice(0, -1) : href;
}

export function parseUrl(url: string | undefined): URL | undefined {
  if (!url) return undefined;
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}
