/**
 * The fake ComfyUI's executor: one prompt at a time, lowest `number` first; each node of a
 * prompt runs in dependency order (cached nodes skipped, by signature), sampler nodes take
 * `steps` × `stepMs` and report progress (and previews), output nodes write deterministic files,
 * and the history entry is written before `executing {node: null}` goes out, as in execution.py.
 */
import { createHash } from 'node:crypto';
import { fakeMedia, type MediaKind } from './comfyui-media.ts';
import { byNodeId } from './comfyui-validate.ts';
import { fileKey, sanitizeExtra, sleep, type ComfyFakeState, type RunningPrompt } from './comfyui-state.ts';
import type { ComfySockets } from './comfyui-ws.ts';

/** One fake: its state and its websockets, what the executor and the routes work on. */
export interface ComfyCore {
  s: ComfyFakeState;
  ws: ComfySockets;
}

/** Sampler classes: they take `steps` and report `progress`. */
export const SAMPLER_CLASSES = new Set(['KSampler', 'KSamplerAdvanced', 'SamplerCustom', 'SamplerCustomAdvanced']);

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

function nextNumberOrder(c: ComfyCore): void {
  c.s.pending.sort((a, b) => a.number - b.number);
}

/** Starts the next pending prompt, lowest number first, when nothing runs and the box is up. */
export function pump(c: ComfyCore): void {
  if (c.s.running || c.s.knobs.stuck || c.s.down !== 'no' || c.s.knobs.restarting || c.s.pending.length === 0) return;
  nextNumberOrder(c);
  const record = c.s.pending.shift()!;
  const abort = new AbortController();
  const run: RunningPrompt = { record, abort };
  c.s.running = run;
  record.status = 'running';
  record.startedAt = Date.now();
  c.ws.broadcastStatus();
  void execute(c, run)
    .catch(() => {})
    .finally(() => {
      if (c.s.running?.record === record) c.s.running = undefined;
      setImmediate(() => pump(c));
    });
}

function outputFile(
  c: ComfyCore,
  classType: string,
  node: any,
  seed: string,
  promptJson: string,
): { ui: Record<string, unknown> } {
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
  const counter = (c.s.counters.get(counterKey) ?? 0) + 1;
  c.s.counters.set(counterKey, counter);
  const filename = `${base}_${String(counter).padStart(5, '0')}_.${kind.media}`;
  c.s.files.set(
    fileKey(kind.type, subfolder, filename),
    fakeMedia(kind.media, seed, kind.media === 'png' ? { prompt: promptJson } : undefined),
  );
  const ui: Record<string, unknown> = { [kind.key]: [{ filename, subfolder, type: kind.type }] };
  if (kind.animated) ui.animated = [true];
  return { ui };
}

async function execute(c: ComfyCore, run: RunningPrompt): Promise<void> {
  const { record, abort } = run;
  const { id: promptId, clientId, prompt } = record;
  const messages: Array<[string, Record<string, unknown>]> = [];
  const dropped = () => run.reason === 'dropped';
  const addMessage = (event: string, data: Record<string, unknown>, broadcast = false) => {
    const full = { ...data, timestamp: Date.now() };
    messages.push([event, full]);
    if (dropped()) return;
    if (clientId !== null || broadcast) c.ws.send(clientId, event, full);
  };
  /** executing / executed: only to a prompt's own client. */
  const toClient = (type: string, data: Record<string, unknown>) => {
    if (clientId !== null && !dropped()) c.ws.send(clientId, type, data);
  };
  /** progress / progress_state: to the client, or to everyone when the prompt has none. */
  const progressOut = (type: string, data: Record<string, unknown>) => {
    if (!dropped()) c.ws.send(clientId, type, data);
  };

  addMessage('execution_start', { prompt_id: promptId });
  // LoadImage's IS_CHANGED is the file's hash: a replaced upload runs again.
  const sigs = signaturesOf(prompt, (node) => {
    if (node.class_type !== 'LoadImage') return '';
    const data = c.s.files.get(
      fileKey('input', '', String(node.inputs?.image ?? '').replace(/\s*\[(input|output|temp)\]$/, '')),
    );
    return data ? createHash('sha256').update(data).digest('hex') : 'missing';
  });
  const order = executionOrder(prompt, record.outputs);
  // The failNode knob always fails: that node and everything downstream of it are never cached.
  const uncachable = downstreamOf(prompt, c.s.knobs.failNode);
  const cachedIds = c.s.knobs.cache ? order.filter((id) => !uncachable.has(id) && c.s.cache.has(sigs.get(id)!)) : [];
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
    const info = c.s.objectInfo[classType];
    if (cachedSet.has(id)) {
      const ui = c.s.cache.get(sigs.get(id)!)?.ui;
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
    if (c.s.knobs.failNode === id) {
      outcome = fail('RuntimeError', c.s.knobs.failMessage ?? `fake ComfyUI: node ${id} failed (knob failNode)`, [
        `  File "/ComfyUI/nodes.py", line 1, in ${classType}\n    raise RuntimeError()\n`,
      ]);
      break;
    }
    if (classType === 'LoadImage') {
      const name = String(node.inputs?.image ?? '').replace(/\s*\[(input|output|temp)\]$/, '');
      if (!c.s.files.has(fileKey('input', '', name)) && !c.s.files.has(`input/${name}`)) {
        outcome = fail('FileNotFoundError', `[Errno 2] No such file or directory: '/ComfyUI/input/${name}'`, [
          `  File "/ComfyUI/nodes.py", line 1657, in load_image\n    img = node_helpers.pillow(Image.open, image_path)\n`,
        ]);
        break;
      }
    }
    if (SAMPLER_CLASSES.has(classType)) {
      const own = Number(node.inputs?.steps);
      const steps = c.s.knobs.steps > 0 ? c.s.knobs.steps : Number.isFinite(own) && own > 0 ? own : 20;
      for (let step = 1; step <= steps; step++) {
        await sleep(c.s.knobs.stepMs, abort.signal);
        if (interrupted()) break;
        progressOut('progress', { value: step, max: steps, prompt_id: promptId, node: id });
        state(id, step, steps, 'running');
        if (c.s.knobs.previews && !dropped()) c.ws.sendPreview(clientId, promptId, id, `${sigs.get(id)}:${step}`);
      }
      if (interrupted()) {
        outcome = interruptedAt();
        break;
      }
    } else {
      await sleep(c.s.knobs.nodeMs, abort.signal);
      if (interrupted()) {
        outcome = interruptedAt();
        break;
      }
    }
    let ui: Record<string, unknown> | undefined;
    if (info?.output_node === true) {
      ui = outputFile(c, classType, node, sigs.get(id)!, promptJson).ui;
      uiOutputs[id] = ui;
      toClient('executed', { node: id, display_node: id, output: ui, prompt_id: promptId });
    }
    state(id, 1, 1, 'finished');
    if (c.s.knobs.cache) c.s.cache.set(sigs.get(id)!, { ui });
    executed.push(id);
  }

  if (dropped()) return;
  if (outcome.kind === 'success') addMessage('execution_success', { prompt_id: promptId });
  else if (outcome.kind === 'error') addMessage('execution_error', outcome.data);
  else addMessage('execution_interrupted', outcome.data, true);
  record.status = outcome.kind;
  record.endedAt = Date.now();
  // task_done: the c.s.history entry exists before `executing {node: null}` goes out.
  c.s.history.set(promptId, {
    prompt: [record.number, promptId, prompt, sanitizeExtra(record.extraData), record.outputs],
    outputs: uiOutputs,
    status: {
      status_str: outcome.kind === 'success' ? 'success' : 'error',
      completed: outcome.kind === 'success',
      messages,
    },
    meta: Object.fromEntries(
      Object.keys(uiOutputs).map((id) => [id, { node_id: id, display_node: id, parent_node: null, real_node_id: id }]),
    ),
  });
  c.s.running = undefined;
  toClient('executing', { node: null, prompt_id: promptId });
  c.ws.broadcastStatus();
}
