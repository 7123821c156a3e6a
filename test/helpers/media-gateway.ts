/**
 * A gateway with generation aliases on fake ComfyUI boxes, for the media API tests (images,
 * native, jobs): the real fixture workflows read in place, a master key, users made through
 * the admin API, and small HTTP helpers (JSON calls, job polling, SSE reading).
 */
import { readdirSync } from 'node:fs';
import type { GatewayConfig } from '../../src/config/types.ts';
import { spoolDir } from '../../src/media/inputs/upload-spool.ts';
import type { JobEvent, JobView } from '../../src/media/service-types.ts';
import { startComfyFake } from '../fakes/comfyui-server.ts';
import type { ComfyFake, ComfyKnobs } from '../fakes/comfyui-types.ts';
import { comfyNodeInfo, fakeObjectInfo, FAKE_CUSTOM_NODE_INFO, type ObjectInfo } from '../fakes/comfyui-nodes.ts';
import { fakePng } from '../fakes/comfyui-media.ts';
import { objectInfo, workflow } from './comfy-workflows.ts';
import { startGateway, type TestGateway } from './gateway.ts';

export const MASTER = 'master-key-media-0123456789';
/** Fast knobs for a comfyui backend in tests. */
const FAST_COMFY = { poll_interval: 0.05, disconnect_grace: 0.5, max_wait: 30 } as const;

export interface MediaRig {
  gw: TestGateway;
  /** Runs sd15 (txt2img), wan (image → video) and audio (stable audio): the fake's own object_info, combos checked. */
  comfy: ComfyFake;
  /** Runs inpaint (image + mask, the flux1 inpaint workflow): the base-install object_info dump, combos not checked (its models are not the dump's). */
  edit: ComfyFake;
  url: string;
  close(): Promise<void>;
}

/**
 * The base-install object_info dump, plus the custom nodes the fixture workflows use and the one class
 * the flux1 inpaint workflow needs that the dump lacks (Flux2Scheduler, shaped as it is used).
 */
export function editObjectInfo(): ObjectInfo {
  return {
    ...(structuredClone(objectInfo()) as ObjectInfo),
    ...structuredClone(FAKE_CUSTOM_NODE_INFO),
    Flux2Scheduler: comfyNodeInfo('Flux2Scheduler', {
      category: 'sampling/custom_sampling/schedulers',
      required: {
        steps: ['INT', { default: 20, min: 1, max: 4096 }],
        width: ['INT', { default: 1024, min: 16, max: 16384 }],
        height: ['INT', { default: 1024, min: 16, max: 16384 }],
      },
      output: ['SIGMAS'],
    }),
  };
}

export function imageModels(): GatewayConfig['image_models'] {
  return {
    sd15: [{ backend: 'comfy', workflow_json: workflow('txt2img_sd15_api.json') }],
    wan: [{ backend: 'comfy', workflow_json: workflow('img2video_wan_lowram_api.json') }],
    audio: [{ backend: 'comfy', workflow_json: workflow('stable_audio_open_api.json') }],
    inpaint: [{ backend: 'edit', workflow_json: workflow('img2img_workflow_flux1_inpaint_api.json') }],
  };
}

export async function startMediaRig(
  opts: {
    knobs?: Partial<ComfyKnobs>;
    editKnobs?: Partial<ComfyKnobs>;
    overrides?: Partial<GatewayConfig>;
  } = {},
): Promise<MediaRig> {
  const comfy = await startComfyFake({ objectInfo: fakeObjectInfo(), knobs: opts.knobs });
  const edit = await startComfyFake({
    objectInfo: editObjectInfo(),
    knobs: { validateCombos: false, ...opts.editKnobs },
  });
  const gw = await startGateway(
    [
      { name: 'comfy', url: comfy.url, type: 'comfyui', ...FAST_COMFY },
      { name: 'edit', url: edit.url, type: 'comfyui', ...FAST_COMFY },
    ],
    { api_key: MASTER, image_models: imageModels(), ...opts.overrides },
  );
  return {
    gw,
    comfy,
    edit,
    url: gw.url,
    close: async () => {
      await gw.close();
      await comfy.close();
      await edit.close();
    },
  };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A user made through the admin API; returns its key. */
export async function createUser(url: string, name: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(`${url}/admin/api/users`, {
    method: 'POST',
    headers: { ...bearer(MASTER), 'content-type': 'application/json' },
    body: JSON.stringify({ name, ...body }),
  });
  if (res.status !== 201) throw new Error(`creating user ${name}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { key: string }).key;
}

export interface JsonAnswer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A JSON call; `body` a string is sent as is (exact big integers). */
export async function call<T = any>(
  url: string,
  method: string,
  path: string,
  key: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<JsonAnswer<T>> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(key ? bearer(key) : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed as T };
}

/** Polls `GET /v1/jobs/{id}` until `until(view)`; returns that view. */
export async function pollJob(
  url: string,
  id: string,
  key: string,
  until: (v: JobView) => boolean,
  timeoutMs = 10_000,
): Promise<JobView> {
  const start = Date.now();
  for (;;) {
    const r = await call<JobView>(url, 'GET', `/v1/jobs/${id}`, key);
    if (r.status !== 200) throw new Error(`GET /v1/jobs/${id}: ${r.status} ${JSON.stringify(r.body)}`);
    if (until(r.body)) return r.body;
    if (Date.now() - start > timeoutMs)
      throw new Error(`job ${id} stayed ${r.body.status} (${JSON.stringify(r.body)})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export const isTerminal = (v: JobView) => v.status === 'done' || v.status === 'failed' || v.status === 'cancelled';

export interface SseFrame {
  event?: string;
  data?: string;
  comment?: string;
}

/** Reads an SSE response to its end (or `timeoutMs`), frame by frame. */
export async function readSse(
  res: Response,
  timeoutMs = 10_000,
): Promise<{ frames: SseFrame[]; events: JobEvent[]; ended: boolean }> {
  const frames: SseFrame[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const timer = setTimeout(() => void reader.cancel(), timeoutMs);
  let ended = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      buffer += decoder.decode(value, { stream: true });
      let at: number;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const frame: SseFrame = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) frame.comment = line.slice(1).trim();
          else if (line.startsWith('event: ')) frame.event = line.slice(7);
          else if (line.startsWith('data: ')) frame.data = line.slice(6);
        }
        frames.push(frame);
      }
    }
  } catch {
    // cancelled at the timeout
  } finally {
    clearTimeout(timer);
  }
  const events = frames.filter((f) => f.data !== undefined).map((f) => JSON.parse(f.data!) as JobEvent);
  return { frames, events, ended };
}

/** Small, valid, distinct PNGs. */
export const pngA = fakePng('reference image A', { size: 16 });
export const pngB = fakePng('reference image B', { size: 16 });
export const maskPng = fakePng('mask', { size: 16 });

/**
 * The names under which the fake received `bytes` as an upload (read off the recorded upload
 * requests: after a clean run the gateway overwrites its uploads with the placeholder).
 */
export function uploadsOf(fake: ComfyFake, bytes: Buffer): string[] {
  return fake.requests
    .filter((r) => r.method === 'POST' && /\/upload\/(image|mask)$/.test(r.path) && r.rawBody.includes(bytes))
    .flatMap((r) =>
      Object.values((r.body as { files?: Record<string, { filename: string }> }).files ?? {}).map((f) => f.filename),
    );
}

/** The uploads being spooled under the rig's jobs folder now (none when the folder is absent). */
export function spooledUploads(rig: MediaRig): string[] {
  try {
    return readdirSync(spoolDir(rig.gw.gateway.config().jobs_dir));
  } catch {
    return [];
  }
}
