/**
 * Rebooting a ComfyUI box through ComfyUI-Manager, for `auto_restart` (a stuck executor).
 * The route moved over the Manager's versions, so each is tried in turn, the next only when
 * the previous one does not exist (404) or takes the other method (405):
 *   POST /api/v2/manager/reboot  Manager v4 (the `comfyui_manager` package)
 *   POST /api/manager/reboot     the legacy Manager since its CSRF hardening (2026)
 *   GET  /api/manager/reboot     older Managers
 *   GET  /manager/reboot         older ComfyUI that serves no `/api` aliases
 * The POSTs carry no body and no Content-Type: the Manager refuses the form content types
 * there. A reboot re-executes the Python process, so the request usually ends with the
 * connection dropped instead of an answer: that counts as accepted.
 */
import { request, type Dispatcher } from 'undici';

export const MANAGER_REBOOT_ROUTES: readonly { method: 'GET' | 'POST'; path: string }[] = Object.freeze([
  { method: 'POST', path: '/api/v2/manager/reboot' },
  { method: 'POST', path: '/api/manager/reboot' },
  { method: 'GET', path: '/api/manager/reboot' },
  { method: 'GET', path: '/manager/reboot' },
]);

export type RebootOutcome = { ok: true; route: string; detail: string } | { ok: false; route?: string; detail: string };

/** Asks the box at `base` to reboot, with the backend's credential `headers`; never throws. */
export async function requestManagerReboot(
  base: string,
  dispatcher: Dispatcher,
  timeoutMs: number,
  headers: Record<string, string> = {},
): Promise<RebootOutcome> {
  for (const { method, path } of MANAGER_REBOOT_ROUTES) {
    const route = `${method} ${path}`;
    let status: number;
    let text: string;
    try {
      const res = await request(`${base}${path}`, {
        method,
        dispatcher,
        headers,
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.statusCode;
      text = await res.body.text().catch(() => '');
    } catch (err) {
      // the process re-executes itself before answering
      if (isDropped(err)) return { ok: true, route, detail: 'the connection closed (the server is restarting)' };
      return { ok: false, route, detail: (err as Error).message };
    }
    if (status === 404 || status === 405) continue;
    if (status >= 200 && status < 300) return { ok: true, route, detail: `answered ${status}` };
    if (status === 403)
      return {
        ok: false,
        route,
        detail: "ComfyUI-Manager refused (403): its security_level must be 'middle' or lower to allow reboots",
      };
    return { ok: false, route, detail: `answered ${status}: ${text.slice(0, 200)}` };
  }
  return { ok: false, detail: 'no ComfyUI-Manager reboot route answered (is ComfyUI-Manager installed?)' };
}

function isDropped(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'UND_ERR_CLOSED' || code === 'EPIPE';
}
