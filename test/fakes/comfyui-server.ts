/**
 * The fake ComfyUI (0.27-like): a real node:http + websocket server on 127.0.0.1 that answers the
 * way ComfyUI's server.py / execution.py / main.py do (see test/fixtures/comfyui/api-notes.md),
 * records every request and obeys its knobs. All state lives in the startComfyFake closure.
 *
 * Every route is also served under `/api` (as ComfyUI does):
 *   GET  /object_info[/{class}] /system_stats /features /queue /prompt /history[/{id}] /view /models[/{folder}]
 *   POST /prompt /upload/image /upload/mask /interrupt /queue /history /free
 *   WS   /ws?clientId=…
 * One prompt runs at a time, lowest `number` first (FIFO; `front` jumps ahead). Each node of a
 * prompt runs in dependency order; sampler nodes take `steps` × `stepMs` and report progress;
 * output nodes write deterministic files (PNG, mp4, webm, flac, glb …) that /view serves.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import { WebSocketServer, WebSocket } from 'ws';
import { fakeObjectInfo, FAKE_MODELS, type ObjectInfo } from './comfyui-nodes.ts';
import { contentTypeOf, fakeMedia, fakePng, type MediaKind } from './comfyui-media.ts';
import { parseMultipart } from './comfyui-multipart.ts';
import { managerRoute } from './comfyui-manager.ts';
import { byNodeId, validatePrompt, type ComfyErrorBody } from './comfyui-validate.ts';
import {
  DEFAULT_COMFY_KNOBS,
  type ComfyFake,
  type ComfyKnobs,
  type ComfyPromptRecord,
  type RecordedComfyRequest,
  type StartComfyFakeOptions,
} from './comfyui-types.ts';

/** What GET /features answers (the 0.27.0 capture, `extension.manager` emptied by the fixture). */
export const COMFY_FEATURES = {
  supports_preview_metadata: true,
  max_upload_size: 104857600,
  node_replacements: true,
  assets: false,
  extension: { manager: {} },
};

export const COMFY_VERSION = '0.27.0';

/** Sampler classes: they take `steps` and report `progress`. */
export const SAMPLER_CLASSES = new Set(['KSampler', 'KSamplerAdvanced', 'SamplerCustom', 'SamplerCustomAdvanced']);

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SENSITIVE = ['auth_token_comfy_org', 'api_key_comfy_org'];
const GiB = 1024 ** 3;

/** The output an output class writes: ui key, file kind, default prefix, folder type. */
interface OutputKind {
  key: string;
  media: MediaKind;
  prefix: string;
  type: 'output' | 'temp';
  animated?: boolean;
}

function outputKindOf(classType: string): OutputKind {
  switch (classType) {
    case 'PreviewImage':
    case 'MaskPreview':
      return { key: 'images', media: 'png', prefix: 'ComfyUI', type: 'temp' };
    case 'SaveAudio':
      return { key: 'audio', media: 'flac', prefix: 'audio/ComfyUI', type: 'output' };
    case 'SaveAudioMP3':
      return { key: 'audio', media: 'mp3', prefix: 'audio/ComfyUI', type: 'output' };
    case 'SaveAudioOpus':
      return { key: 'audio', media: 'opus', prefix: 'audio/ComfyUI', type: 'output' };
    case 'PreviewAudio':
      return { key: 'audio', media: 'flac', prefix: 'ComfyUI', type: 'temp' };
    case 'SaveVideo':
      return { key: 'images', media: 'mp4', prefix: 'video/ComfyUI', type: 'output', animated: true };
    case 'SaveWEBM':
      return { key: 'images', media: 'webm', prefix: 'ComfyUI', type: 'output', animated: true };
    case 'SaveGLB':
      return { key: '3d', media: 'glb', prefix: 'mesh/ComfyUI', type: 'output' };
    default:
      return { key: 'images', media: 'png', prefix: 'ComfyUI', type: 'output' };
  }
}

const fileKey = (type: string, subfolder: string, filename: string) =>
  `${type}/${subfolder ? `${subfolder}/` : ''}${filename}`;

function sanitizeExtra(extra: Record<string, unknown>): Record<string, unknown> {
  const out = { ...extra };
  for (const k of SENSITIVE) delete out[k];
  return out;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return new Promise((r) => setImmediate(r));
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** The cache signature of every node: class + inputs, links replaced by the upstream signature. */
function signaturesOf(prompt: Record<string, any>, extra: (node: any) => string): Map<string, string> {
  const sigs = new Map<string, string>();
  const visiting = new Set<string>();
  const sig = (id: string): string => {
    const known = sigs.get(id);
    if (known) return known;
    if (visiting.has(id) || !prompt[id]) return `missing:${id}`;
    visiting.add(id);
    const node = prompt[id];
    const inputs = Object.keys(node.inputs ?? {})
      .sort()
      .map((k) => {
        const v = node.inputs[k];
        return Array.isArray(v) && v.length === 2 && typeof v[1] === 'number'
          ? [k, ['#link', sig(String(v[0])), v[1]]]
          : [k, v];
      });
    const s = createHash('sha256')
      .update(JSON.stringify([node.class_type, inputs, extra(node)]))
      .digest('hex');
    visiting.delete(id);
    sigs.set(id, s);
    return s;
  };
  for (const id of Object.keys(prompt)) sig(id);
  return sigs;
}

/** The nodes the outputs need, inputs first (a depth-first post-order from each output). */
function executionOrder(prompt: Record<string, any>, outputs: string[]): string[] {
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (id: string) => {
    if (seen.has(id) || !prompt[id]) return;
    seen.add(id);
    for (const v of Object.values(prompt[id].inputs ?? {})) {
      if (Array.isArray(v) && v.length === 2 && typeof v[1] === 'number') visit(String(v[0]));
    }
    order.push(id);
  };
  for (const o of [...outputs].sort(byNodeId)) visit(o);
  return order;
}

/** `id` and every node that (transitively) takes its output. */
function downstreamOf(prompt: Record<string, any>, id: string | undefined): Set<string> {
  const out = new Set<string>();
  if (id === undefined || !prompt[id]) return out;
  out.add(id);
  for (let grew = true; grew;) {
    grew = false;
    for (const [nid, node] of Object.entries(prompt)) {
      if (out.has(nid)) continue;
      const linked = Object.values(node?.inputs ?? {}).some(
        (v) => Array.isArray(v) && v.length === 2 && out.has(String(v[0])),
      );
      if (linked) {
        out.add(nid);
        grew = true;
      }
    }
  }
  return out;
}

type Outcome =
  | { kind: 'success' }
  | { kind: 'error'; data: Record<string, unknown> }
  | { kind: 'interrupted'; data: Record<string, unknown> };

/** Starts the fake ComfyUI on 127.0.0.1. */
export async function startComfyFake(opts: StartComfyFakeOptions = {}): Promise<ComfyFake> {
  const objectInfo: ObjectInfo = opts.objectInfo ?? fakeObjectInfo();
  const knobs: ComfyKnobs = { ...DEFAULT_COMFY_KNOBS, ...opts.knobs };
  const requests: RecordedComfyRequest[] = [];
  const prompts: ComfyPromptRecord[] = [];
  const uploads = new Map<string, Buffer>();
  const files = new Map<string, Buffer>();
  // A fresh ComfyUI install ships input/example.png.
  files.set(fileKey('input', '', 'example.png'), fakePng('example.png', { size: 16 }));

  let pending: ComfyPromptRecord[] = [];
  let running:
    | { record: ComfyPromptRecord; abort: AbortController; reason?: 'interrupt' | 'dropped'; lastNode?: string }
    | undefined;
  const history = new Map<string, Record<string, unknown>>();
  const cache = new Map<string, { ui?: Record<string, unknown> }>();
  const counters = new Map<string, number>();
  let number = 0;
  let interruptCount = 0;
  let down: 'no' | '503' | 'refused' = 'no';

  // ---- websocket -------------------------------------------------------------------------------
  const sockets = new Map<string, WebSocket>();
  const previewMetadata = new WeakSet<WebSocket>();
  const wss = new WebSocketServer({ noServer: true });

  const queueRemaining = () => pending.length + (running ? 1 : 0);

  function sendRaw(ws: WebSocket, payload: string | Buffer): void {
    if (ws.readyState === WebSocket.OPEN) ws.send(payload);
  }

  /** send_sync: to the socket of `sid`, or to everyone when `sid` is null. */
  function send(sid: string | null, type: string, data: unknown): void {
    const text = JSON.stringify({ type, data });
    if (sid === null) {
      for (const ws of sockets.values()) sendRaw(ws, text);
      return;
    }
    const ws = sockets.get(sid);
    if (ws) sendRaw(ws, text);
  }

  function broadcastStatus(): void {
    send(null, 'status', { status: { exec_info: { queue_remaining: queueRemaining() } } });
  }

  wss.on('connection', (ws: WebSocket, req: IncomingMessage) => {
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const sid = url.searchParams.get('clientId') || randomUUID().replace(/-/g, '');
    sockets.delete(sid); // "Reusing existing session, remove old"
    sockets.set(sid, ws);
    let first = true;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary || !first) return;
      first = false;
      try {
        const msg = JSON.parse(data.toString('utf8'));
        if (msg?.type === 'feature_flags') {
          if (msg.data?.supports_preview_metadata === true) previewMetadata.add(ws);
          sendRaw(ws, JSON.stringify({ type: 'feature_flags', data: COMFY_FEATURES }));
        }
      } catch {
        /* ignored, as ComfyUI logs and goes on */
      }
    });
    ws.on('close', () => {
      if (sockets.get(sid) === ws) sockets.delete(sid);
    });
    ws.on('error', () => {});
    sendRaw(
      ws,
      JSON.stringify({ type: 'status', data: { status: { exec_info: { queue_remaining: queueRemaining() } }, sid } }),
    );
    if (running && running.record.clientId === sid && running.lastNode)
      send(sid, 'executing', { node: running.lastNode });
  });

  // ---- execution ---------------------------------------------------------------------------------
  function nextNumberOrder(): void {
    pending.sort((a, b) => a.number - b.number);
  }

  function pump(): void {
    if (running || knobs.stuck || down !== 'no' || knobs.restarting || pending.length === 0) return;
    nextNumberOrder();
    const record = pending.shift()!;
    const abort = new AbortController();
    running = { record, abort };
    record.status = 'running';
    record.startedAt = Date.now();
    broadcastStatus();
    void execute(running)
      .catch(() => {})
      .finally(() => {
        if (running?.record === record) running = undefined;
        setImmediate(pump);
      });
  }

  function outputFile(classType: string, node: any, seed: string, promptJson: string): { ui: Record<string, unknown> } {
    const kind = outputKindOf(classType);
    let prefix =
      typeof node.inputs?.filename_prefix === 'string' && node.inputs.filename_prefix !== ''
        ? node.inputs.filename_prefix
        : kind.prefix;
    if (kind.type === 'temp')
      prefix = `${prefix}_temp_${seed
        .replace(/[^a-f]/g, '')
        .padEnd(5, 'a')
        .slice(0, 5)}`;
    const slash = prefix.lastIndexOf('/');
    const subfolder = slash >= 0 ? prefix.slice(0, slash) : '';
    const base = slash >= 0 ? prefix.slice(slash + 1) : prefix;
    const counterKey = `${kind.type}/${subfolder}/${base}`;
    const counter = (counters.get(counterKey) ?? 0) + 1;
    counters.set(counterKey, counter);
    const filename = `${base}_${String(counter).padStart(5, '0')}_.${kind.media}`;
    files.set(
      fileKey(kind.type, subfolder, filename),
      fakeMedia(kind.media, seed, kind.media === 'png' ? { prompt: promptJson } : undefined),
    );
    const ui: Record<string, unknown> = { [kind.key]: [{ filename, subfolder, type: kind.type }] };
    if (kind.animated) ui.animated = [true];
    return { ui };
  }

  function sendPreview(sid: string | null, promptId: string, nodeId: string, seed: string): void {
    const png = fakePng(`preview:${seed}`);
    const targets = sid === null ? [...sockets.values()] : sockets.has(sid) ? [sockets.get(sid)!] : [];
    for (const ws of targets) {
      if (previewMetadata.has(ws)) {
        const meta = Buffer.from(
          JSON.stringify({
            node_id: nodeId,
            prompt_id: promptId,
            display_node_id: nodeId,
            parent_node_id: null,
            real_node_id: nodeId,
            image_type: 'image/png',
          }),
        );
        const head = Buffer.alloc(8);
        head.writeUInt32BE(4, 0);
        head.writeUInt32BE(meta.length, 4);
        sendRaw(ws, Buffer.concat([head, meta, png]));
      } else {
        const head = Buffer.alloc(8);
        head.writeUInt32BE(1, 0); // PREVIEW_IMAGE
        head.writeUInt32BE(2, 4); // PNG
        sendRaw(ws, Buffer.concat([head, png]));
      }
    }
  }

  async function execute(run: NonNullable<typeof running>): Promise<void> {
    const { record, abort } = run;
    const { id: promptId, clientId, prompt } = record;
    const messages: Array<[string, Record<string, unknown>]> = [];
    const dropped = () => run.reason === 'dropped';
    const addMessage = (event: string, data: Record<string, unknown>, broadcast = false) => {
      const full = { ...data, timestamp: Date.now() };
      messages.push([event, full]);
      if (dropped()) return;
      if (clientId !== null || broadcast) send(clientId, event, full);
    };
    /** executing / executed: only to a prompt's own client. */
    const toClient = (type: string, data: Record<string, unknown>) => {
      if (clientId !== null && !dropped()) send(clientId, type, data);
    };
    /** progress / progress_state: to the client, or to everyone when the prompt has none. */
    const progressOut = (type: string, data: Record<string, unknown>) => {
      if (!dropped()) send(clientId, type, data);
    };

    addMessage('execution_start', { prompt_id: promptId });
    // LoadImage's IS_CHANGED is the file's hash: a replaced upload runs again.
    const sigs = signaturesOf(prompt, (node) => {
      if (node.class_type !== 'LoadImage') return '';
      const data = files.get(
        fileKey('input', '', String(node.inputs?.image ?? '').replace(/\s*\[(input|output|temp)\]$/, '')),
      );
      return data ? createHash('sha256').update(data).digest('hex') : 'missing';
    });
    const order = executionOrder(prompt, record.outputs);
    // The failNode knob always fails: that node and everything downstream of it are never cached.
    const uncachable = downstreamOf(prompt, knobs.failNode);
    const cachedIds = knobs.cache ? order.filter((id) => !uncachable.has(id) && cache.has(sigs.get(id)!)) : [];
    addMessage('execution_cached', { nodes: cachedIds, prompt_id: promptId });
    const promptJson = JSON.stringify(prompt);

    const uiOutputs: Record<string, Record<string, unknown>> = {};
    const executed: string[] = [];
    const nodeStates: Record<string, Record<string, unknown>> = {};
    const state = (id: string, value: number, max: number, st: 'running' | 'finished' | 'error') => {
      nodeStates[id] = {
        value,
        max,
        state: st,
        node_id: id,
        prompt_id: promptId,
        display_node_id: id,
        parent_node_id: null,
        real_node_id: id,
      };
      progressOut('progress_state', { prompt_id: promptId, nodes: structuredClone(nodeStates) });
    };
    const cachedSet = new Set(cachedIds);
    let outcome: Outcome = { kind: 'success' };

    for (const id of order) {
      const node = prompt[id];
      const classType: string = node.class_type;
      const info = objectInfo[classType];
      if (cachedSet.has(id)) {
        const ui = cache.get(sigs.get(id)!)?.ui;
        if (ui) {
          uiOutputs[id] = ui;
          toClient('executed', { node: id, display_node: id, output: ui, prompt_id: promptId });
        }
        executed.push(id);
        continue;
      }
      const interrupted = () => abort.signal.aborted;
      const interruptedAt = (): Outcome => ({
        kind: 'interrupted',
        data: { prompt_id: promptId, node_id: id, node_type: classType, executed: [...executed] },
      });
      if (interrupted()) {
        outcome = interruptedAt();
        break;
      }
      run.lastNode = id;
      state(id, 0, 1, 'running');
      toClient('executing', { node: id, display_node: id, prompt_id: promptId });
      const fail = (type: string, message: string, frames: string[]): Outcome => {
        state(id, 0, 1, 'error');
        const currentInputs = Object.fromEntries(
          Object.entries(node.inputs ?? {})
            .filter(([, v]) => !Array.isArray(v))
            .map(([k, v]) => [k, [v]]),
        );
        return {
          kind: 'error',
          data: {
            prompt_id: promptId,
            node_id: id,
            node_type: classType,
            executed: [...executed],
            exception_message: message,
            exception_type: type,
            traceback: [
              `  File "/ComfyUI/execution.py", line 496, in execute\n    output_data, output_ui, has_subgraph, has_pending_tasks = await get_output_data(prompt_id, unique_id, obj, input_data_all, execution_block_cb=execution_block_cb, pre_execute_cb=pre_execute_cb, hidden_inputs=hidden_inputs)\n`,
              ...frames,
            ],
            current_inputs: currentInputs,
            current_outputs: executed.filter((e) => e !== id),
          },
        };
      };
      if (knobs.failNode === id) {
        outcome = fail('RuntimeError', knobs.failMessage ?? `fake ComfyUI: node ${id} failed (knob failNode)`, [
          `  File "/ComfyUI/nodes.py", line 1, in ${classType}\n    raise RuntimeError()\n`,
        ]);
        break;
      }
      if (classType === 'LoadImage') {
        const name = String(node.inputs?.image ?? '').replace(/\s*\[(input|output|temp)\]$/, '');
        if (!files.has(fileKey('input', '', name)) && !files.has(`input/${name}`)) {
          outcome = fail('FileNotFoundError', `[Errno 2] No such file or directory: '/ComfyUI/input/${name}'`, [
            `  File "/ComfyUI/nodes.py", line 1657, in load_image\n    img = node_helpers.pillow(Image.open, image_path)\n`,
          ]);
          break;
        }
      }
      if (SAMPLER_CLASSES.has(classType)) {
        const own = Number(node.inputs?.steps);
        const steps = knobs.steps > 0 ? knobs.steps : Number.isFinite(own) && own > 0 ? own : 20;
        for (let step = 1; step <= steps; step++) {
          await sleep(knobs.stepMs, abort.signal);
          if (interrupted()) break;
          progressOut('progress', { value: step, max: steps, prompt_id: promptId, node: id });
          state(id, step, steps, 'running');
          if (knobs.previews && !dropped()) sendPreview(clientId, promptId, id, `${sigs.get(id)}:${step}`);
        }
        if (interrupted()) {
          outcome = interruptedAt();
          break;
        }
      } else {
        await sleep(knobs.nodeMs, abort.signal);
        if (interrupted()) {
          outcome = interruptedAt();
          break;
        }
      }
      let ui: Record<string, unknown> | undefined;
      if (info?.output_node === true) {
        ui = outputFile(classType, node, sigs.get(id)!, promptJson).ui;
        uiOutputs[id] = ui;
        toClient('executed', { node: id, display_node: id, output: ui, prompt_id: promptId });
      }
      state(id, 1, 1, 'finished');
      if (knobs.cache) cache.set(sigs.get(id)!, { ui });
      executed.push(id);
    }

    if (dropped()) return;
    if (outcome.kind === 'success') addMessage('execution_success', { prompt_id: promptId });
    else if (outcome.kind === 'error') addMessage('execution_error', outcome.data);
    else addMessage('execution_interrupted', outcome.data, true);
    record.status = outcome.kind;
    record.endedAt = Date.now();
    // task_done: the history entry exists before `executing {node: null}` goes out.
    history.set(promptId, {
      prompt: [record.number, promptId, prompt, sanitizeExtra(record.extraData), record.outputs],
      outputs: uiOutputs,
      status: {
        status_str: outcome.kind === 'success' ? 'success' : 'error',
        completed: outcome.kind === 'success',
        messages,
      },
      meta: Object.fromEntries(
        Object.keys(uiOutputs).map((id) => [
          id,
          { node_id: id, display_node: id, parent_node: null, real_node_id: id },
        ]),
      ),
    });
    running = undefined;
    toClient('executing', { node: null, prompt_id: promptId });
    broadcastStatus();
  }

  /** Drops every socket, the queue, the running prompt (no history entry) and the history. */
  function dropAll(): void {
    if (running) {
      running.reason = 'dropped';
      running.record.status = 'dropped';
      running.abort.abort();
      running = undefined;
    }
    for (const p of pending) p.status = 'dropped';
    pending = [];
    history.clear();
    cache.clear();
    for (const ws of sockets.values()) ws.terminate();
    sockets.clear();
    for (const s of httpSockets) s.destroy();
  }

  // ---- HTTP --------------------------------------------------------------------------------------
  function json(res: ServerResponse, status: number, body: unknown): void {
    if (res.destroyed) return;
    const payload = JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(payload),
    });
    res.end(payload);
  }
  function text(res: ServerResponse, status: number, body: string): void {
    if (res.destroyed) return;
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }
  /** aiohttp's `web.Response(status=200)`: an empty body. */
  const empty = (res: ServerResponse) => {
    if (!res.destroyed) {
      res.writeHead(200, { 'Content-Length': 0 });
      res.end();
    }
  };
  const notFound = (res: ServerResponse) => text(res, 404, '404: Not Found');

  function servedObjectInfo(): ObjectInfo {
    const load = objectInfo.LoadImage?.input?.required?.image;
    if (!Array.isArray(load) || !Array.isArray(load[0])) return objectInfo;
    const copy = { ...objectInfo, LoadImage: structuredClone(objectInfo.LoadImage) };
    const inputs = [...files.keys()]
      .filter((k) => k.startsWith('input/'))
      .map((k) => k.slice('input/'.length))
      .sort();
    copy.LoadImage!.input.required.image[0] = inputs;
    return copy;
  }

  function inputFileNames(): Set<string> {
    return new Set([...files.keys()].filter((k) => k.startsWith('input/')).map((k) => k.slice('input/'.length)));
  }

  function queueItem(p: ComfyPromptRecord): unknown[] {
    return [p.number, p.id, p.prompt, sanitizeExtra(p.extraData), p.outputs];
  }

  function historyWindow(query: URLSearchParams): Record<string, unknown> {
    const entries = [...history.entries()];
    const max = query.has('max_items') ? Number(query.get('max_items')) : undefined;
    let offset = query.has('offset') ? Number(query.get('offset')) : -1;
    if (offset < 0 && max !== undefined) offset = Math.max(0, entries.length - max);
    if (offset < 0) offset = 0;
    const window = entries.slice(offset, max !== undefined ? offset + max : undefined);
    return Object.fromEntries(window);
  }

  function promptError(res: ServerResponse, error: ComfyErrorBody, nodeErrors: Record<string, unknown> = {}): void {
    json(res, 400, { error, node_errors: nodeErrors });
  }

  function submitPrompt(body: any, headers: IncomingMessage['headers'], res: ServerResponse): void {
    if (typeof body !== 'object' || body === null || !('prompt' in body)) {
      return promptError(res, {
        type: 'no_prompt',
        message: 'No prompt provided',
        details: 'No prompt provided',
        extra_info: {},
      });
    }
    let promptId: string;
    if (body.prompt_id === undefined || body.prompt_id === null) promptId = randomUUID();
    else if (typeof body.prompt_id === 'string' && UUID_RE.test(body.prompt_id)) promptId = body.prompt_id;
    else
      return promptError(res, {
        type: 'invalid_prompt_id',
        message: 'Invalid prompt_id format',
        details: `prompt_id must be a canonical lowercase UUID, got: ${String(body.prompt_id)}`,
        extra_info: {},
      });
    const prompt = body.prompt;
    if (typeof prompt !== 'object' || prompt === null || Array.isArray(prompt)) {
      return promptError(res, {
        type: 'invalid_prompt',
        message: 'Invalid prompt',
        details: 'prompt must be an object',
        extra_info: {},
      });
    }
    let num: number;
    if (typeof body.number === 'number') num = body.number;
    else {
      num = body.front === true ? -number : number;
      number++;
    }
    const extraData: Record<string, unknown> =
      typeof body.extra_data === 'object' && body.extra_data !== null ? { ...body.extra_data } : {};
    if (typeof body.client_id === 'string') extraData.client_id = body.client_id;
    const usage = headers['comfy-usage-source'];
    if (typeof usage === 'string') extraData.comfy_usage_source = usage;
    const targets = Array.isArray(body.partial_execution_targets)
      ? body.partial_execution_targets.map(String)
      : undefined;
    const v = validatePrompt(prompt, {
      objectInfo,
      inputFiles: inputFileNames(),
      validateCombos: knobs.validateCombos,
      skipUploadCheck: knobs.missingUpload === 'execution',
      legacyMissingNode: knobs.legacyMissingNode,
      targets,
    });
    if (!v.ok) return promptError(res, v.error, v.nodeErrors);
    extraData.create_time = Date.now();
    const record: ComfyPromptRecord = {
      id: promptId,
      number: num,
      clientId: typeof body.client_id === 'string' ? body.client_id : null,
      prompt,
      extraData,
      outputs: v.outputs,
      status: 'pending',
      submittedAt: Date.now(),
    };
    prompts.push(record);
    pending.push(record);
    json(res, 200, { prompt_id: promptId, number: num, node_errors: v.nodeErrors });
    broadcastStatus();
    setImmediate(pump);
  }

  function upload(body: Buffer, contentType: string | undefined, res: ServerResponse): void {
    const form = parseMultipart(body, contentType);
    const image = form?.files.image;
    if (!form || !image || image.filename === '') return text(res, 400, '400: Bad Request');
    const type = ['input', 'temp', 'output'].includes(form.fields.type ?? '') ? form.fields.type! : 'input';
    const subfolder = (form.fields.subfolder ?? '').replace(/^\/+|\/+$/g, '');
    if (subfolder.split('/').includes('..')) return text(res, 400, '400: Bad Request');
    const overwrite = form.fields.overwrite === 'true' || form.fields.overwrite === '1';
    let name = image.filename.split(/[\\/]/).pop()!;
    if (!overwrite) {
      const dot = name.lastIndexOf('.');
      const stem = dot > 0 ? name.slice(0, dot) : name;
      const ext = dot > 0 ? name.slice(dot) : '';
      let i = 1;
      for (;;) {
        const existing = files.get(fileKey(type, subfolder, name));
        if (!existing || existing.equals(image.data)) break; // same hash: reused
        name = `${stem} (${i})${ext}`;
        i++;
      }
    }
    files.set(fileKey(type, subfolder, name), image.data);
    uploads.set(subfolder ? `${subfolder}/${name}` : name, image.data);
    json(res, 200, { name, subfolder, type });
  }

  function view(query: URLSearchParams, res: ServerResponse): void {
    let filename = query.get('filename');
    if (!filename) return notFound(res);
    let type = query.get('type') || 'output';
    const annotated = /\s*\[(input|output|temp)\]$/.exec(filename);
    if (annotated) {
      type = annotated[1]!;
      filename = filename.slice(0, annotated.index);
    }
    if (filename.startsWith('/') || filename.includes('..')) return text(res, 400, '400: Bad Request');
    const subfolder = (query.get('subfolder') ?? '').replace(/^\/+|\/+$/g, '');
    if (subfolder.split('/').includes('..')) return text(res, 403, '403: Forbidden');
    const data = files.get(fileKey(type, subfolder, filename));
    if (!data) return notFound(res);
    res.writeHead(200, {
      'Content-Type': contentTypeOf(filename),
      'Content-Length': data.length,
      'Content-Disposition': `filename="${filename}"`,
    });
    res.end(data);
  }

  function systemStats(): unknown {
    const busy = running !== undefined;
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

  function interrupt(body: any): void {
    const target =
      typeof body === 'object' && body !== null && typeof body.prompt_id === 'string' ? body.prompt_id : undefined;
    if (!running) return;
    if (target !== undefined && running.record.id !== target) return;
    interruptCount++;
    running.reason = 'interrupt';
    running.abort.abort();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (knobs.refuse) {
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
    requests.push({
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...req.headers },
      body,
      rawBody: raw,
    });
    if (knobs.latencyMs > 0) await sleep(knobs.latencyMs, new AbortController().signal);
    if (knobs.restarting || down === '503') return text(res, 503, '503 Service Unavailable');
    const path = url.pathname.startsWith('/api/') ? url.pathname.slice(4) : url.pathname;
    const q = url.searchParams;
    const manager = managerRoute(knobs.manager, method, path, ctype);
    // a reboot re-executes the process (a fresh executor): the connection drops, no answer
    if (manager === 'reboot') {
      knobs.stuck = false;
      void restart();
      return;
    }
    if (manager) return text(res, manager.status, manager.body);

    if (method === 'GET' || method === 'HEAD') {
      if (path === '/object_info') return json(res, 200, servedObjectInfo());
      if (path.startsWith('/object_info/')) {
        const cls = decodeURIComponent(path.slice('/object_info/'.length));
        const all = servedObjectInfo();
        return json(res, 200, Object.hasOwn(all, cls) ? { [cls]: all[cls] } : {});
      }
      if (path === '/system_stats') return json(res, 200, systemStats());
      if (path === '/features') return json(res, 200, COMFY_FEATURES);
      if (path === '/prompt') return json(res, 200, { exec_info: { queue_remaining: queueRemaining() } });
      if (path === '/queue')
        return json(res, 200, {
          queue_running: running ? [queueItem(running.record)] : [],
          queue_pending: pending.map(queueItem),
        });
      if (path === '/history') return json(res, 200, historyWindow(q));
      if (path.startsWith('/history/')) {
        const id = decodeURIComponent(path.slice('/history/'.length));
        const entry = history.get(id);
        return json(res, 200, entry ? { [id]: entry } : {});
      }
      if (path === '/view') return view(q, res);
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
          return submitPrompt(b, req.headers, res);
        case '/upload/image':
        case '/upload/mask':
          if (knobs.uploadMs > 0) await sleep(knobs.uploadMs, new AbortController().signal);
          return upload(raw, ctype, res);
        case '/interrupt':
          interrupt(b);
          return empty(res);
        case '/queue': {
          if (b?.clear === true) {
            for (const p of pending) p.status = 'deleted';
            pending = [];
          }
          if (Array.isArray(b?.delete)) {
            const ids = new Set(b.delete.map(String));
            for (const p of pending) if (ids.has(p.id)) p.status = 'deleted';
            pending = pending.filter((p) => !ids.has(p.id));
          }
          broadcastStatus();
          return empty(res);
        }
        case '/history': {
          if (b?.clear === true) history.clear();
          if (Array.isArray(b?.delete)) for (const id of b.delete) history.delete(String(id));
          return empty(res);
        }
        case '/free': {
          if (b?.free_memory === true) cache.clear();
          return empty(res);
        }
        default:
          return notFound(res);
      }
    }
    return text(res, 405, '405: Method Not Allowed');
  }

  // ---- listener ----------------------------------------------------------------------------------
  const httpSockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) text(res, 500, `fake comfyui crashed: ${String(err)}`);
      else res.destroy();
    });
  });
  server.on('connection', (socket: Socket) => {
    if (knobs.refuse) {
      socket.resetAndDestroy();
      return;
    }
    httpSockets.add(socket);
    socket.once('close', () => httpSockets.delete(socket));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...req.headers },
      body: undefined,
      rawBody: Buffer.alloc(0),
      ws: true,
    });
    if (knobs.refuse) {
      socket.resetAndDestroy();
      return;
    }
    if (knobs.restarting || down === '503') {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    if (url.pathname !== '/ws' && url.pathname !== '/api/ws') {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(opts.port ?? 0);
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake comfyui: no TCP address');
  const port = address.port;
  let closed = false;

  async function restart(o: { downMs?: number; mode?: 'refused' | '503' } = {}): Promise<void> {
    const mode = o.mode ?? 'refused';
    down = mode;
    dropAll();
    if (mode === 'refused')
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    await new Promise((r) => setTimeout(r, o.downMs ?? 200));
    if (closed) return;
    if (mode === 'refused') await listen(port);
    down = 'no';
    setImmediate(pump);
  }

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    knobs,
    setKnobs(patch: Partial<ComfyKnobs>) {
      const wasRestarting = knobs.restarting;
      Object.assign(knobs, patch);
      if (knobs.restarting && !wasRestarting) dropAll();
      setImmediate(pump);
    },
    requests,
    prompts,
    uploads,
    files,
    objectInfo,
    wsClients: () => [...sockets.entries()].filter(([, ws]) => ws.readyState === WebSocket.OPEN).map(([sid]) => sid),
    interrupts: () => interruptCount,
    restart,
    async close() {
      closed = true;
      dropAll();
      wss.close();
      await new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
