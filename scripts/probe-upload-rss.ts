/**
 * The memory probe of issue 18's "Bound memory across requests": a gateway in its own process
 * (tsx src/server.ts) on a fake ComfyUI, then three concurrent `/v1/images/edits` of five
 * 60 MiB images each (every one over the request's 256 MiB). Prints each answer's status and
 * the gateway's RSS before, at its peak (sampled every 20 ms) and after.
 *   node --import tsx scripts/probe-upload-rss.ts [--requests 3] [--files 5] [--mib 60] [--budget <bytes>]
 * (`--budget`: max_upload_bytes_inflight; default the gateway's own, 0 = none.)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startComfyFake } from '../test/fakes/comfyui-server.ts';
import { workflow } from '../test/helpers/comfy-workflows.ts';
import { editObjectInfo } from '../test/helpers/media-gateway.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string' }, files: { type: 'string' }, mib: { type: 'string' }, budget: { type: 'string' },
  },
});
const REQUESTS = Number(values.requests ?? 3);
const FILES = Number(values.files ?? 5);
const MIB = Number(values.mib ?? 60);
const KEY = 'probe-master-key-0123456789';

const freePort = () => new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const port = (s.address() as { port: number }).port;
    s.close(() => resolve(port));
  });
});
const rssMiB = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
};

const comfy = await startComfyFake({ objectInfo: editObjectInfo(), knobs: { validateCombos: false } });
const dir = mkdtempSync(join(tmpdir(), 'llmgw-probe-'));
const port = await freePort();
writeFileSync(join(dir, 'config.json'), JSON.stringify({
  api_key: KEY, store_dir: join(dir, 'store'), jobs_dir: join(dir, 'jobs'), log_level: 'warn',
  ...(values.budget !== undefined ? { max_upload_bytes_inflight: Number(values.budget) } : {}),
  backends: [{ name: 'edit', url: comfy.url, type: 'comfyui' }],
  image_models: { inpaint: [{ backend: 'edit', workflow_json: workflow('img2img_workflow_flux1_inpaint_api.json') }] },
}));
// YAML is a superset of JSON
const args = ['--import', 'tsx', 'src/server.ts', '--config', join(dir, 'config.json'), '--port', String(port)];
const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
const url = `http://127.0.0.1:${port}`;
try {
  for (let i = 0; ; i++) {
    if (i > 200) throw new Error('the gateway did not start');
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 1000));
  const before = rssMiB(child.pid!);
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rssMiB(child.pid!)); }, 20);
  const image = new Blob([new Uint8Array(MIB * 1024 * 1024).fill(7)], { type: 'image/png' });
  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: REQUESTS }, async () => {
    const form = new FormData();
    form.append('model', 'inpaint');
    form.append('prompt', 'probe');
    for (let i = 0; i < FILES; i++) form.append('image[]', image, `${i}.png`);
    const t0 = Date.now();
    const headers = { authorization: `Bearer ${KEY}` };
    const broken = (err: unknown) => ({ status: `error ${String((err as Error).cause ?? err)}`, headers: new Headers(), text: async () => '' });
    const res = await fetch(`${url}/v1/images/edits`, { method: 'POST', headers, body: form }).catch(broken);
    const text = await res.text().catch(() => '');
    const retryAfter = res.headers.get('retry-after');
    return { status: res.status, retryAfter, ms: Date.now() - t0, body: text.slice(0, 160) };
  }));
  await new Promise((r) => setTimeout(r, 500));
  clearInterval(sampler);
  const after = rssMiB(child.pid!);
  for (const a of answers) console.log(JSON.stringify(a));
  console.log(JSON.stringify({
    requests: REQUESTS, files: FILES, mib: MIB, ms: Date.now() - started,
    rss_before_mib: Math.round(before), rss_peak_mib: Math.round(peak), rss_after_mib: Math.round(after),
  }));
} finally {
  child.kill('SIGTERM');
  await comfy.close();
  await new Promise((r) => setTimeout(r, 500));
  rmSync(dir, { recursive: true, force: true });
}
