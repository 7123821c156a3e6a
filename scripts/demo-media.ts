/**
 * The media part of `npm run demo`: two fake ComfyUI boxes (test/fakes/comfyui-server.ts) as
 * `comfyui` backends, generation aliases on the fixture workflows in test/fixtures/comfyui
 * (sd15 = txt2img_sd15_api.json; inpaint = the flux1 inpaint workflow, with an image and a mask
 * slot), and a walk through the Images API and the native job API.
 */
import { createHash } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import type { BackendSpec, GatewayConfig } from '../src/config/types.ts';
import type { JobEvent, JobView } from '../src/media/service-types.ts';
import { fakePng } from '../test/fakes/comfyui-media.ts';
import { startComfyFake } from '../test/fakes/comfyui-server.ts';
import type { ComfyFake } from '../test/fakes/comfyui-types.ts';
import { workflow } from '../test/helpers/comfy-workflows.ts';
import { editObjectInfo } from '../test/helpers/media-gateway.ts';

type Say = (text: string) => void;

export interface MediaFleet {
  backends: BackendSpec[];
  imageModels: GatewayConfig['image_models'];
  close(): Promise<void>;
}

/** Short /history polls so that a job ends as soon as the fake is done (the default is 1 s). */
const QUICK = { poll_interval: 0.05 } as const;

/** The two fake ComfyUI boxes and the aliases on them. */
export async function startMediaFleet(spec: (s: Partial<BackendSpec> & { name: string; url: string }) => BackendSpec): Promise<MediaFleet> {
  // `comfy` runs sd15 on the fake's own object_info (combos checked: the sd15 checkpoint and LoRAs are installed there)
  const comfy: ComfyFake = await startComfyFake({ knobs: { stepMs: 40, steps: 8, previews: true } });
  // `comfy-edit` runs the flux1 inpaint workflow on the base-install object_info dump (its model files are not the dump's: combos unchecked)
  const edit: ComfyFake = await startComfyFake({ objectInfo: editObjectInfo(), knobs: { stepMs: 20, steps: 4, validateCombos: false } });
  return {
    backends: [
      spec({ name: 'comfy', url: comfy.url, type: 'comfyui', local: true, ...QUICK }),
      spec({ name: 'comfy-edit', url: edit.url, type: 'comfyui', local: true, ...QUICK }),
    ],
    imageModels: {
      sd15: [{ backend: 'comfy', workflow_json: workflow('txt2img_sd15_api.json') }],
      inpaint: [{ backend: 'comfy-edit', workflow_json: workflow('img2img_workflow_flux1_inpaint_api.json') }],
    },
    close: async () => {
      await comfy.close();
      await edit.close();
    },
  };
}

const LORA = 'subject_style_v1.safetensors';
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex').slice(0, 12);
const short = (id: string) => `${id.slice(0, 12)}…`;

/** `<bytes> B <mime> <w>×<h> sha256 <12 hex>…` of an image's bytes. */
async function describe(bytes: Buffer): Promise<string> {
  const meta = await sharp(bytes).metadata();
  return `${bytes.length} B image/${meta.format} ${meta.width}×${meta.height} sha256 ${sha(bytes)}…`;
}

async function json<T>(res: Response | Promise<Response>): Promise<T> {
  const r = await res;
  if (!r.ok) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Reads an SSE response, one `{type, …}` event at a time (the frame's `data:` line). */
async function* sseEvents(res: Response): AsyncGenerator<JobEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body!) {
    buffer += decoder.decode(chunk, { stream: true });
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer.slice(0, at).split('\n').find((l) => l.startsWith('data: '));
      buffer = buffer.slice(at + 2);
      if (data) yield JSON.parse(data.slice(6)) as JobEvent;
    }
  }
}

async function until(base: string, id: string, ok: (v: JobView) => boolean): Promise<JobView> {
  for (;;) {
    const view = await json<JobView>(fetch(`${base}/v1/jobs/${id}`));
    if (ok(view)) return view;
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function mediaWalkthrough(base: string, oai: OpenAI, say: Say, n: number): Promise<void> {
  say(`\n${n}. media on ComfyUI — two fake ComfyUI boxes (comfy, comfy-edit) as comfyui backends;`);
  say('    generation aliases (image_models) on the real fixture workflows:');
  const listed = await json<{ data: { id: string; backends: string[] }[] }>(fetch(`${base}/v1/models?type=image`));
  for (const m of listed.data) say(`   GET /v1/models?type=image → ${m.id.padEnd(8)} on ${m.backends.join(', ')}`);
  const loras = await json<{ data: { id: string }[] }>(fetch(`${base}/v1/generations/sd15/loras`));
  const names = loras.data.map((l) => l.id);
  say(`   GET /v1/generations/sd15/loras → ${names.length} installed on its boxes, ${names.includes(LORA) ? `${LORA} among them (lora_1 below)` : names.join(', ')}`);

  say('\n   the OpenAI Images API (openai SDK images.generate, b64_json):');
  const generated = await oai.images.generate({ model: 'sd15', prompt: 'a lighthouse at dusk', size: '512x512', response_format: 'b64_json' });
  const png = Buffer.from(generated.data![0].b64_json!, 'base64');
  say(`   ${generated.data!.length} image: ${await describe(png)}  (the fake paints 8×8 whatever the size)`);

  say('\n   native async job — POST /v1/generations {mode:"async", params:{seed, steps, lora_1}}, then GET /v1/jobs/{id}/events (SSE):');
  const accepted = await post(`${base}/v1/generations`, { model: 'sd15', prompt: 'a harbour at night', mode: 'async', params: { seed: 42, steps: 8, lora_1: LORA } });
  const { job_id: id } = (await accepted.json()) as { job_id: string };
  say(`   ${accepted.status} {job_id: "${short(id)}"}, Location: ${accepted.headers.get('location')?.replace(id, short(id))}`);
  // shown: the state at subscription, the first node-level and the first step-level progress, the first preview, the end
  let progress = 0;
  let shown = 0;
  let previews = 0;
  let stepShown = false;
  let done: JobView | undefined;
  for await (const ev of sseEvents(await fetch(`${base}/v1/jobs/${id}/events`))) {
    if (ev.type === 'queued') say(`   event: queued    position ${ev.position ?? '-'}`);
    else if (ev.type === 'running') say(`   event: running   on ${ev.backend}`);
    else if (ev.type === 'progress') {
      progress++;
      if (progress > 1 && (stepShown || !ev.step)) continue;
      shown++;
      stepShown ||= ev.step !== undefined;
      say(`   event: progress  ${ev.progress}%${ev.node ? ` at ${ev.node}` : ''}${ev.step ? `, step ${ev.step.value}/${ev.step.max}` : ''}`);
    } else if (ev.type === 'preview' && ++previews === 1) {
      const preview = await fetch(`${base}${ev.url}`);
      say(`   event: preview   GET ${ev.url.replace(id, short(id))} → ${(await preview.arrayBuffer()).byteLength} B ${preview.headers.get('content-type')}`);
    } else if (ev.type === 'done' || ev.type === 'failed' || ev.type === 'cancelled') {
      say(`   … ${progress - shown} more progress events, ${Math.max(0, previews - 1)} more previews`);
      const r = ev.job.results[0];
      say(`   event: ${ev.type}      on ${ev.job.backend}, seed ${ev.job.seed}, lora_1 ${String(ev.job.params.lora_1)}:`);
      say(`                    ${ev.job.results.length} result, ${r?.mime} ${r?.bytes} B sha256 ${r?.sha256.slice(0, 12)}…`);
      done = ev.job;
    }
  }
  if (!done?.results.length) throw new Error(`job ${id} did not end done`);
  const thumbPath = `${done.results[0].url}?format=webp&w=256`;
  const thumb = Buffer.from(await (await fetch(`${base}${thumbPath}`)).arrayBuffer());
  say(`   thumbnail: ${base}${thumbPath.replace(id, short(id))}`);
  say(`              → ${await describe(thumb)} (made once with sharp, then cached; never enlarged)`);

  say('\n   images.edit — an image and a mask (multipart), onto the inpaint workflow\'s LoadImage / LoadImageMask slots:');
  const canvas = fakePng('demo canvas', { size: 16 });
  const edited = await oai.images.edit({
    model: 'inpaint', prompt: 'paint a red door',
    image: await toFile(canvas, 'canvas.png', { type: 'image/png' }),
    mask: await toFile(fakePng('demo mask', { size: 16 }), 'mask.png', { type: 'image/png' }),
  });
  say(`   ${edited.data!.length} image: ${await describe(Buffer.from(edited.data![0].b64_json!, 'base64'))}`);
  const jobs = await json<{ data: JobView[] }>(fetch(`${base}/v1/jobs?limit=10`));
  const editJob = jobs.data.find((j) => j.model === 'inpaint')!;
  const image = editJob.inputs.find((i) => i.param !== 'mask') ?? editJob.inputs[0];
  const kept = Buffer.from(await (await fetch(`${base}${image.url}`)).arrayBuffer());
  say(`   the job (${short(editJob.id)}, ran on ${editJob.backend}) keeps its inputs: ${editJob.inputs.map((i) => i.param).join(' + ')};`);
  say(`   GET …/input/${image.n} (${image.param}) sha256 ${sha(kept)}…, the canvas sent: ${sha(canvas)}…`);

  say('\n   cancel a parked job — comfy takes one job at a time (max_concurrent 1 for comfyui):');
  const first = (await json<{ job_id: string }>(post(`${base}/v1/generations`, { model: 'sd15', prompt: 'first', mode: 'async' }))).job_id;
  await until(base, first, (v) => v.status === 'running');
  const second = (await json<{ job_id: string }>(post(`${base}/v1/generations`, { model: 'sd15', prompt: 'second', mode: 'async' }))).job_id;
  const parked = await until(base, second, (v) => v.queue_position !== null);
  say(`   job ${short(first)} running; job ${short(second)} ${parked.status}, queue_position ${parked.queue_position}`);
  const cancelled = await json<JobView>(fetch(`${base}/v1/jobs/${second}/cancel`, { method: 'POST' }));
  say(`   POST /v1/jobs/${short(second)}/cancel → ${cancelled.status} (it never reached ComfyUI)`);
  const finished = await until(base, first, (v) => v.status !== 'running' && v.status !== 'queued');
  say(`   the running one goes on: ${finished.status}`);
  const all = await json<{ data: JobView[] }>(fetch(`${base}/v1/jobs`));
  const tally = new Map<string, number>();
  for (const j of all.data) tally.set(j.status, (tally.get(j.status) ?? 0) + 1);
  const counts = [...tally].map(([status, k]) => `${k} ${status}`).join(', ');
  say(`   GET /v1/jobs → this caller's ${all.data.length} jobs: ${counts}`);
}
