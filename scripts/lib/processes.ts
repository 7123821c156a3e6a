/**
 * Benchmark plumbing: fake backends and gateways as their own processes (pinned with taskset
 * when it exists: gateway on CPU 0, fakes and drivers on CPU 1), /proc readings of CPU and RSS.
 * Everything listens on 127.0.0.1; every child is killed when the benchmark exits.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = resolve(import.meta.dirname, '..', '..');
/** Pin with taskset when it exists, unless UNPINNED=1 (the same benchmarks, unpinned). */
export const HAS_TASKSET = !process.env.UNPINNED && spawnSync('taskset', ['-V']).status === 0;
const children: ChildProcess[] = [];
const scratch = mkdtempSync(join(tmpdir(), 'llmgw-bench-'));

process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

// ───────────────────────────── processes

function pinned(cpu: number, cmd: string, args: string[]): [string, string[]] {
  return HAS_TASKSET ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args];
}

async function startProcess(cpu: number, args: string[], ready: RegExp, env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; line: string }> {
  const [cmd, argv] = pinned(cpu, process.execPath, ['--import', 'tsx', ...args]);
  const child = spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => { stderr += c.toString(); });
  const rl = createInterface({ input: child.stdout! });
  return await new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout starting ${args.join(' ')}: ${stderr}`)), 20_000);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${stderr}`)));
    rl.on('line', (line) => {
      if (ready.test(line)) {
        clearTimeout(timer);
        resolvePromise({ child, line });
      }
    });
  });
}

/** A fake (vLLM unless `kind` says otherwise) serving model `bench`, answering `chunks` chunks at `tps` per second (0 = at once). */
export async function startFakeProcess(chunks: number, tps: number, kind = 'vllm'): Promise<string> {
  const { line } = await startProcess(1, ['scripts/fake-backend.ts', '--kind', kind, '--models', 'bench', '--chunks', String(chunks), '--tps', String(tps)], /^READY /);
  return line.slice('READY '.length).trim();
}

/** A backend of the benchmark's gateway: its URL, or its URL with more of its config (type, api_key). */
export type BenchBackend = string | { url: string; type?: string; api_key?: string };

/**
 * A gateway process with one backend per entry of `backends` and extra config lines; waits for
 * /health ok. `opts.nodeArgs` go to node before the bundle (e.g. `--import` a probe).
 */
export async function startGatewayProcess(
  name: string,
  backends: Record<string, BenchBackend>,
  extra: string[],
  opts: { nodeArgs?: string[]; env?: NodeJS.ProcessEnv; secretKey?: Buffer } = {},
): Promise<{ url: string; pid: number }> {
  const port = 18_300 + Math.floor(Math.random() * 1000);
  if (opts.secretKey) {
    // the instances of one cluster share secret.key
    mkdirSync(join(scratch, name), { recursive: true });
    writeFileSync(join(scratch, name, 'secret.key'), opts.secretKey, { mode: 0o600 });
  }
  const config = join(scratch, `${name}.yaml`);
  writeFileSync(config, [
    `store_dir: ${join(scratch, name)}`,
    'log_level: warn',
    'health_check_interval: 300',
    ...extra,
    'backends:',
    ...Object.entries(backends).map(([b, spec]) => {
      const { url, ...more } = typeof spec === 'string' ? { url: spec } : spec;
      const extras = Object.entries(more).map(([k, v]) => `, ${k}: "${v}"`).join('');
      return `  - { name: ${b}, url: "${url}"${extras} }`;
    }),
  ].join('\n'));
  buildOnce();
  const [cmd, argv] = pinned(0, process.execPath, [...(opts.nodeArgs ?? []), '--enable-source-maps', 'dist/server.mjs', '--config', config, '--port', String(port)]);
  const child = spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    const health = await fetch(`${url}/health`).then((r) => r.json() as Promise<{ status: string }>, () => undefined);
    if (health?.status === 'ok') return { url, pid: child.pid! }; // taskset execs node: same pid
    await sleep(100);
  }
  throw new Error(`gateway ${name} did not come up`);
}

export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, 100 Hz ticks
}

export function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

let built = false;

/** Benchmarks measure what `npm start` runs: the bundle in dist/, built once per run. */
function buildOnce(): void {
  if (built) return;
  const result = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('build failed');
  built = true;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Current RSS of a process in MB. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}
