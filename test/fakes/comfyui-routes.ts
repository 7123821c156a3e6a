/**
 * The fake ComfyUI's HTTP routes, each also under `/api` (as ComfyUI serves them):
 *   GET  /object_info[/{class}] /system_stats /features /queue /prompt /history[/{id}] /view /models[/{folder}]
 *   POST /prompt /upload/image /upload/mask /interrupt /queue /history /free
 * Every request is recorded first; the knobs can refuse it, delay it or answer 503.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FAKE_MODELS, type ObjectInfo } from './comfyui-nodes.ts';
import { parseMultipart } from './comfyui-multipart.ts';
import { managerRoute } from './comfyui-manager.ts';
import type { ComfyPromptRecord } from './comfyui-types.ts';
import type { ComfyCore } from './comfyui-execute.ts';
import { upload, view } from './comfyui-files.ts';
import { empty, json, notFound, readRaw, text } from './comfyui-http.ts';
import { submitPrompt } from './comfyui-prompt.ts';
import { COMFY_FEATURES, COMFY_VERSION, queueRemaining, sanitizeExtra, sleep } from './comfyui-state.ts';

const GiB = 1024 ** 3;

/** What the routes reach of the fake besides its state: its restart (a Manager reboot). */
export interface ComfyRoutesCore extends ComfyCore {
  restart(): Promise<void>;
}

function servedObjectInfo(c: ComfyRoutesCore): ObjectInfo {
  const load = c.s.objectInfo.LoadImage?.input?.required?.image;
  if (!Array.isArray(load) || !Array.isArray(load[0])) return c.s.objectInfo;
  const copy = { ...c.s.objectInfo, LoadImage: structuredClone(c.s.objectInfo.LoadImage) };
  const inputs = [...c.s.files.keys()]
    .filter((k) => k.startsWith('input/'))
    .map((k) => k.slice('input/'.length))
    .sort();
  copy.LoadImage!.input.required.image[0] = inputs;
  return copy;
}

function queueItem(p: ComfyPromptRecord): unknown[] {
  return [p.number, p.id, p.prompt, sanitizeExtra(p.extraData), p.outputs];
}

function historyWindow(c: ComfyRoutesCore, query: URLSearchParams): Record<string, unknown> {
  const entries = [...c.s.history.entries()];
  const max = query.has('max_items') ? Number(query.get('max_items')) : undefined;
  let offset = query.has('offset') ? Number(query.get('offset')) : -1;
  if (offset < 0 && max !== undefined) offset = Math.max(0, entries.length - max);
  if (offset < 0) offset = 0;
  const window = entries.slice(offset, max !== undefined ? offset + max : undefined);
  return Object.fromEntries(window);
}

function systemStats(c: ComfyRoutesCore): unknown {
  const busy = c.s.running !== undefined;
  return {
    system: {
      os: 'linux',
      ram_total: 64 * GiB,
      ram_free: 41 * GiB,
      comfyui_version: COMFY_VERSION,
      required_frontend_version: '1.45.20',
      python_version: '3.12.3 (main, Feb  4 2026, 14:48:35) [GCC 13.3.0]',
      pytorch_version: '2.9.1+cu128',
      embedded_python: false,
      deploy_environment: 'local-git',
      argv: ['main.py', '--listen', '0.0.0.0', '--port', '8188'],
    },
    devices: [
      {
        name: 'cuda:0 NVIDIA GeForce RTX 3090 : cudaMallocAsync',
        type: 'cuda',
        index: 0,
        vram_total: 24 * GiB,
        vram_free: (busy ? 6 : 22) * GiB,
        torch_vram_total: (busy ? 17 : 1) * GiB,
        torch_vram_free: GiB / 2,
      },
    ],
  };
}

function interrupt(c: ComfyRoutesCore, body: any): void {
  const target =
    typeof body === 'object' && body !== null && typeof body.prompt_id === 'string' ? body.prompt_id : undefined;
  if (!c.s.running) return;
  if (target !== undefined && c.s.running.record.id !== target) return;
  c.s.interruptCount++;
  c.s.running.reason = 'interrupt';
  c.s.running.abort.abort();
}

export async function handle(c: ComfyRoutesCore, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (c.s.knobs.refuse) {
    req.socket.resetAndDestroy();
    return;
  }
  const url = new URL(req.url ?? '/', 'http://fake.invalid');
  const method = req.method ?? 'GET';
  const raw = await readRaw(req);
  const ctype = req.headers['content-type'];
  let body: unknown;
  if (raw.length > 0) {
    const form = parseMultipart(raw, ctype);
    if (form)
      body = {
        fields: form.fields,
        files: Object.fromEntries(
          Object.entries(form.files).map(([k, f]) => [k, { filename: f.filename, size: f.data.length }]),
        ),
      };
    else {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = raw.toString('utf8');
      }
    }
  }
  c.s.requests.push({
    method,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: { ...req.headers },
    body,
    rawBody: raw,
  });
  if (c.s.knobs.latencyMs > 0) await sleep(c.s.knobs.latencyMs, new AbortController().signal);
  if (c.s.knobs.restarting || c.s.down === '503') return text(res, 503, '503 Service Unavailable');
  const path = url.pathname.startsWith('/api/') ? url.pathname.slice(4) : url.pathname;
  const q = url.searchParams;
  const manager = managerRoute(c.s.knobs.manager, method, path, ctype);
  // a reboot re-executes the process (a fresh executor): the connection drops, no answer
  if (manager === 'reboot') {
    c.s.knobs.stuck = false;
    void c.restart();
    return;
  }
  if (manager) return text(res, manager.status, manager.body);

  if (method === 'GET' || method === 'HEAD') {
    if (path === '/object_info') return json(res, 200, servedObjectInfo(c));
    if (path.startsWith('/object_info/')) {
      const cls = decodeURIComponent(path.slice('/object_info/'.length));
      const all = servedObjectInfo(c);
      return json(res, 200, Object.hasOwn(all, cls) ? { [cls]: all[cls] } : {});
    }
    if (path === '/system_stats') return json(res, 200, systemStats(c));
    if (path === '/features') return json(res, 200, COMFY_FEATURES);
    if (path === '/prompt') return json(res, 200, { exec_info: { queue_remaining: queueRemaining(c.s) } });
    if (path === '/queue')
      return json(res, 200, {
        queue_running: c.s.running ? [queueItem(c.s.running.record)] : [],
        queue_pending: c.s.pending.map(queueItem),
      });
    if (path === '/history') return json(res, 200, historyWindow(c, q));
    if (path.startsWith('/history/')) {
      const id = decodeURIComponent(path.slice('/history/'.length));
      const entry = c.s.history.get(id);
      return json(res, 200, entry ? { [id]: entry } : {});
    }
    if (path === '/view') return view(c, q, res);
    if (path === '/models') return json(res, 200, Object.keys(FAKE_MODELS));
    if (path.startsWith('/models/')) {
      const folder = decodeURIComponent(path.slice('/models/'.length)) as keyof typeof FAKE_MODELS;
      return Object.hasOwn(FAKE_MODELS, folder)
        ? json(
            res,
            200,
            FAKE_MODELS[folder].filter((m) => m !== 'None'),
          )
        : notFound(res);
    }
    return notFound(res);
  }
  if (method === 'POST') {
    const b = body as any;
    switch (path) {
      case '/prompt':
        return submitPrompt(c, b, req.headers, res);
      case '/upload/image':
      case '/upload/mask':
        if (c.s.knobs.uploadMs > 0) await sleep(c.s.knobs.uploadMs, new AbortController().signal);
        return upload(c, raw, ctype, res);
      case '/interrupt':
        interrupt(c, b);
        return empty(res);
      case '/queue': {
        if (b?.clear === true) {
          for (const p of c.s.pending) p.status = 'deleted';
          c.s.pending = [];
        }
        if (Array.isArray(b?.delete)) {
          const ids = new Set(b.delete.map(String));
          for (const p of c.s.pending) if (ids.has(p.id)) p.status = 'deleted';
          c.s.pending = c.s.pending.filter((p) => !ids.has(p.id));
        }
        c.ws.broadcastStatus();
        return empty(res);
      }
      case '/history': {
        if (b?.clear === true) c.s.history.clear();
        if (Array.isArray(b?.delete)) for (const id of b.delete) c.s.history.delete(String(id));
        return empty(res);
      }
      case '/free': {
        if (b?.free_memory === true) c.s.cache.clear();
        return empty(res);
      }
      default:
        return notFound(res);
    }
  }
  return text(res, 405, '405: Method Not Allowed');
}
