/**
 * ComfyUI-Manager's reboot route for the fake ComfyUI, in each shape the gateway may meet
 * (see ComfyUI-Manager's glob/manager_server.py over its history):
 *   old     GET  /manager/reboot
 *   legacy  POST /manager/reboot (current; form content types refused with 400, its CSRF gate)
 *   v4      POST /v2/manager/reboot (the `comfyui_manager` package)
 *   locked  legacy, with a security_level that forbids reboots (403)
 *   none    no Manager installed (404)
 * The routes are served under `/api` too, like every ComfyUI route. A reboot re-executes the
 * process, so it never answers: the fake restarts (dropping the connection) instead.
 */
export type ManagerFlavour = 'none' | 'old' | 'legacy' | 'v4' | 'locked';

const SIMPLE_FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/**
 * What the Manager does with `method path` (the `/api` prefix stripped): reboot, answer, or
 * nothing (undefined: not a Manager route, the server answers it).
 */
export function managerRoute(
  flavour: ManagerFlavour,
  method: string,
  path: string,
  contentType: string | undefined,
): 'reboot' | { status: number; body: string } | undefined {
  const route = flavour === 'v4' ? '/v2/manager/reboot' : flavour === 'none' ? undefined : '/manager/reboot';
  if (route === undefined || path !== route) return undefined;
  const wanted = flavour === 'old' ? 'GET' : 'POST';
  if (method !== wanted) return { status: 405, body: '405: Method Not Allowed' };
  if (wanted === 'POST' && SIMPLE_FORM_TYPES.has((contentType ?? '').split(';')[0]!.trim().toLowerCase())) {
    return { status: 400, body: 'Invalid Content-Type for this endpoint. Use application/json or omit body.' };
  }
  if (flavour === 'locked') return { status: 403, body: '' };
  return 'reboot';
}
