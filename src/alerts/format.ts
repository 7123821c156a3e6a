/**
 * One alert as the POST each format takes. Pure.
 *
 * - `json`: `{event, backend?, user?, alias?, key?, kind?, detail, at, gateway}` (`at` ISO 8601).
 * - `ntfy`: the detail as a text body; `Title`, `Tags` and `Priority` headers (ntfy's publish API).
 * - `discord`: `{content, allowed_mentions: {parse: []}}` (a webhook execute; no name in the text pings anyone).
 * - `slack`: `{text}` (an incoming webhook), `&`, `<` and `>` escaped as Slack asks.
 */
import type { AlertTargetSpec } from '../config/types.ts';
import { ntfyStyleOf, titleOf, type AlertEvent } from './events.ts';

export interface AlertPost {
  headers: Record<string, string>;
  body: string;
}

/** Discord refuses a `content` over 2000 characters. */
const DISCORD_MAX = 2000;
/** Far more than any alert needs; keeps an odd detail from making a huge POST. */
const DETAIL_MAX = 1500;

export function renderAlert(e: AlertEvent, format: AlertTargetSpec['format'], gateway: string): AlertPost {
  const detail = e.detail.length > DETAIL_MAX ? `${e.detail.slice(0, DETAIL_MAX - 1)}…` : e.detail;
  const title = `${titleOf(e)} (${gateway})`;
  switch (format) {
    case 'ntfy': {
      const style = ntfyStyleOf(e.event);
      return {
        headers: {
          'content-type': 'text/plain; charset=utf-8',
          title: headerSafe(title),
          tags: style.tags,
          priority: String(style.priority),
        },
        body: detail,
      };
    }
    case 'discord': {
      const content = `**${title}**\n${detail}`;
      return json({ content: content.slice(0, DISCORD_MAX), allowed_mentions: { parse: [] } });
    }
    case 'slack':
      return json({ text: `*${slackEscape(title)}*\n${slackEscape(detail)}` });
    case 'json':
      return json({
        event: e.event,
        ...(e.backend !== undefined && { backend: e.backend }),
        ...(e.user !== undefined && { user: e.user }),
        ...(e.alias !== undefined && { alias: e.alias }),
        ...(e.key !== undefined && { key: e.key }),
        ...(e.kind !== undefined && { kind: e.kind }),
        detail,
        at: new Date(e.at).toISOString(),
        gateway,
      });
  }
}

function json(value: unknown): AlertPost {
  return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) };
}

/** A header value node:http sends: printable ASCII only (a user name may be anything). */
function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?');
}

function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
