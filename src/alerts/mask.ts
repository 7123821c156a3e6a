/**
 * An alert URL as people see it, and the parts of it that may be secret. A webhook's secret
 * may sit in its userinfo, its path (Discord's and Slack's tokens, an ntfy topic) or its query,
 * so a URL is shown as its origin and the start of its path only, and log lines have every
 * copy of the path and the userinfo taken out. Pure.
 */

/** Characters of the path shown before `…`, at most (and never more than half of it). */
const PATH_SHOWN = 8;

/** `https://hooks.slack.com/services…` → origin + the path's first characters; no userinfo, no query. */
export function maskAlertUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '(not a URL)';
  }
  const path = parsed.pathname === '/' ? '' : parsed.pathname;
  // at most half of it: a short path (an ntfy topic) is all secret
  const keep = Math.min(PATH_SHOWN, Math.floor(path.length / 2));
  const shown = keep < path.length ? `${path.slice(0, keep)}…` : path;
  return `${parsed.origin}${shown}${parsed.search ? (shown.endsWith('…') ? '' : '?…') : ''}`;
}

/** The URL's parts a log line must not carry: the whole URL, its userinfo, its path and query. */
export function alertUrlSecrets(url: string): string[] {
  const out = new Set<string>([url]);
  try {
    const parsed = new URL(url);
    if (parsed.username) out.add(parsed.username);
    if (parsed.password) out.add(parsed.password);
    if (parsed.pathname.length > 1) out.add(parsed.pathname.slice(1));
    if (parsed.search) out.add(parsed.search.slice(1));
    out.add(parsed.href);
  } catch {
    // not a URL: the text itself is all there is
  }
  return [...out].filter((s) => s.length >= 3).sort((a, b) => b.length - a.length);
}

/** `text` with every copy of `secrets` replaced. */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join('[redacted]');
  return out;
}
