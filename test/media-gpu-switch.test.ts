/**
 * GpuSwitch against real HTTP servers on 127.0.0.1: to media with `unload_llm` the group's
 * llama-swaps unload (POST /api/models/unload, GET /unload on older ones), to LLM with
 * `free_media` its ComfyUIs POST /free; opt-in, fire and forget, failures and timeouts logged,
 * never thrown; wired as the scheduler's onGroupSwitch hook.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { Agent } from 'undici';
import {
  COMFY_FREE_BODY,
  GPU_SWITCH_TIMEOUT_MS,
  GpuSwitch,
  type GpuSwitchDeps,
  type GpuSwitchGroup,
  type GpuSwitchMember,
} from '../src/media/gpu-switch.ts';
import { Scheduler } from '../src/scheduler/index.ts';
import { startFake } from './fakes/index.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import { FakeClock } from './helpers/fake-clock.ts';

interface Seen {
  method: string;
  path: string;
  authorization?: string;
  contentType?: string;
  body: string;
}
type Route = (req: IncomingMessage, res: ServerResponse) => void;

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers) await close();
});

/** A node:http server that records every request and answers with `route`. */
async function server(route: Route): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const srv = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      seen.push({
        method: req.method!,
        path: req.url!,
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        body,
      });
      route(req, res);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen };
}

/** Today's llama-swap routes: GET /unload and POST /api/models/unload; POST /unload is a 405. */
const llamaSwap: Route = (req, res) => {
  const key = `${req.method} ${req.url}`;
  if (key === 'GET /unload') return void res.end('OK');
  if (key === 'POST /api/models/unload')
    return void res.setHeader('content-type', 'application/json').end('{"msg":"ok"}');
  res.statusCode = req.url === '/unload' || req.url === '/api/models/unload' ? 405 : 404;
  res.end();
};
/** llama-swap before /api/models/unload existed. */
const oldLlamaSwap: Route = (req, res) => {
  if (req.method === 'GET' && req.url === '/unload') return void res.end('OK');
  res.statusCode = 404;
  res.end('404 page not found');
};
/** ComfyUI's POST /free: 200 with an empty body. */
const comfy: Route = (req, res) => {
  res.statusCode = req.method === 'POST' && req.url === '/free' ? 200 : 404;
  res.end();
};

interface Logged {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

function gpuSwitch(
  groups: Record<string, GpuSwitchGroup>,
  members: GpuSwitchMember[],
  more: Partial<GpuSwitchDeps> = {},
) {
  const logged: Logged[] = [];
  const log = {
    info: (fields: object, message: string) =>
      void logged.push({ level: 'info', fields: fields as Record<string, unknown>, message }),
    warn: (fields: object, message: string) =>
      void logged.push({ level: 'warn', fields: fields as Record<string, unknown>, message }),
  };
  const sw = new GpuSwitch({ groups: () => groups, members: () => members, log, ...more });
  return { sw, logged };
}

const toMedia = { group: 'box', from: 'llm', to: 'media', backend: 'comfy' } as const;
const toLlm = { group: 'box', from: 'media', to: 'llm', backend: 'swap' } as const;

describe('gpu switch: to media, unload_llm', () => {
  it('POSTs /api/models/unload to the group’s openai backends only, with their key', async () => {
    const swap = await server(llamaSwap);
    const other = await server(comfy);
    const { sw, logged } = gpuSwitch({ box: { unload_llm: true, free_media: true } }, [
      { name: 'swap', url: `${swap.url}/`, type: 'openai', apiKey: 'sk-swap' },
      { name: 'comfy', url: other.url, type: 'comfyui' },
      { name: 'claude', url: other.url, type: 'anthropic' },
    ]);
    const calls = await sw.onSwitch(toMedia);
    assert.deepEqual(swap.seen, [
      { method: 'POST', path: '/api/models/unload', authorization: 'Bearer sk-swap', contentType: undefined, body: '' },
    ]);
    assert.deepEqual(other.seen, [], 'neither ComfyUI nor Anthropic is asked anything');
    assert.deepEqual(calls, [
      { backend: 'swap', action: 'unload_llm', ok: true, request: 'POST /api/models/unload', status: 200 },
    ]);
    assert.equal(logged.length, 1);
    assert.equal(logged[0].level, 'info');
    assert.deepEqual([logged[0].fields.group, logged[0].fields.backend, logged[0].fields.to], ['box', 'swap', 'media']);
  });

  it('falls back to GET /unload on a llama-swap without /api/models/unload', async () => {
    const swap = await server(oldLlamaSwap);
    const { sw } = gpuSwitch({ box: { unload_llm: true } }, [{ name: 'swap', url: swap.url, type: 'openai' }]);
    const [call] = await sw.onSwitch(toMedia);
    assert.deepEqual(
      swap.seen.map((s) => `${s.method} ${s.path}`),
      ['POST /api/models/unload', 'GET /unload'],
    );
    assert.equal(swap.seen[1].authorization, undefined, 'no key configured, none sent');
    assert.deepEqual(call, { backend: 'swap', action: 'unload_llm', ok: true, request: 'GET /unload', status: 200 });
  });

  it('unloads every openai backend of the group, in parallel', async () => {
    const a = await server(llamaSwap);
    const b = await server(oldLlamaSwap);
    const { sw } = gpuSwitch({ box: { unload_llm: true } }, [
      { name: 'a', url: a.url, type: 'openai' },
      { name: 'b', url: b.url, type: 'openai' },
    ]);
    const calls = await sw.onSwitch(toMedia);
    assert.deepEqual(
      calls.map((c) => [c.backend, c.ok]),
      [
        ['a', true],
        ['b', true],
      ],
    );
  });

  it('works against the llama-swap fake of test/fakes (its running list is emptied)', async () => {
    const fake = await startFake('llamaswap');
    closers.push(() => fake.close());
    const { sw } = gpuSwitch({ box: { unload_llm: true } }, [{ name: 'swap', url: fake.url, type: 'openai' }]);
    const [call] = await sw.onSwitch(toMedia);
    assert.equal(call.ok, true);
    assert.ok(
      fake.requests.some((r) => r.method === 'POST' && r.path === '/api/models/unload'),
      'the current llama-swap endpoint',
    );
    const running = await fetch(`${fake.url}/running`).then((r) => r.json() as Promise<{ running: unknown[] }>);
    assert.deepEqual(running.running, []);
  });

  it('nothing without unload_llm, and nothing on the way back to LLM work', async () => {
    const swap = await server(llamaSwap);
    const members: GpuSwitchMember[] = [{ name: 'swap', url: swap.url, type: 'openai' }];
    assert.deepEqual(await gpuSwitch({ box: { free_media: true } }, members).sw.onSwitch(toMedia), []);
    assert.deepEqual(await gpuSwitch({ box: { unload_llm: true } }, members).sw.onSwitch(toLlm), []);
    assert.deepEqual(await gpuSwitch({}, members).sw.onSwitch(toMedia), [], 'a group missing from gpu_groups');
    assert.deepEqual(swap.seen, []);
  });
});

describe('gpu switch: to LLM, free_media', () => {
  it('POSTs /free {unload_models, free_memory} as JSON to the group’s ComfyUI backends only', async () => {
    const comfyA = await server(comfy);
    const swap = await server(llamaSwap);
    const { sw } = gpuSwitch({ box: { free_media: true, unload_llm: true } }, [
      { name: 'comfy', url: comfyA.url, type: 'comfyui', apiKey: 'proxy-key' },
      { name: 'swap', url: swap.url, type: 'openai' },
    ]);
    const calls = await sw.onSwitch(toLlm);
    assert.equal(comfyA.seen.length, 1);
    const [seen] = comfyA.seen;
    assert.deepEqual(
      [seen.method, seen.path, seen.contentType, seen.authorization],
      ['POST', '/free', 'application/json', 'Bearer proxy-key'],
    );
    assert.deepEqual(JSON.parse(seen.body), { unload_models: true, free_memory: true });
    assert.deepEqual(COMFY_FREE_BODY, { unload_models: true, free_memory: true });
    assert.deepEqual(swap.seen, []);
    assert.deepEqual(calls, [{ backend: 'comfy', action: 'free_media', ok: true, request: 'POST /free', status: 200 }]);
  });

  it('works against the ComfyUI fake of test/fakes', async () => {
    const fake = await startComfyFake();
    closers.push(() => fake.close());
    const { sw } = gpuSwitch({ box: { free_media: true } }, [{ name: 'comfy', url: fake.url, type: 'comfyui' }]);
    const [call] = await sw.onSwitch(toLlm);
    assert.equal(call.ok, true);
    const free = fake.requests.find((r) => r.path.endsWith('/free'));
    assert.deepEqual(free?.body, { unload_models: true, free_memory: true });
  });
});

describe('gpu switch: fire and forget', () => {
  it('returns before any request is made', async () => {
    const swap = await server(llamaSwap);
    const { sw } = gpuSwitch({ box: { unload_llm: true } }, [{ name: 'swap', url: swap.url, type: 'openai' }]);
    const started = sw.onSwitch(toMedia);
    assert.equal(swap.seen.length, 0);
    await sw.pending('box');
    assert.equal(swap.seen.length, 1, 'pending() waits for the switch under way');
    await started;
    await sw.pending('box'); // nothing under way: at once
  });

  it('an HTTP error and a refused connection are logged as warnings, never thrown', async () => {
    const broken = await server((_req, res) => {
      res.statusCode = 500;
      res.end('boom');
    });
    const dead = await server(comfy);
    await closers.pop()!(); // nothing listens there any more
    const { sw, logged } = gpuSwitch({ box: { unload_llm: true } }, [
      { name: 'broken', url: broken.url, type: 'openai' },
      { name: 'dead', url: dead.url, type: 'openai' },
    ]);
    const calls = await sw.onSwitch(toMedia);
    assert.deepEqual(calls[0], {
      backend: 'broken',
      action: 'unload_llm',
      ok: false,
      request: 'POST /api/models/unload',
      status: 500,
      error: 'HTTP 500',
    });
    assert.equal(calls[1].ok, false);
    assert.match(calls[1].error!, /ECONNREFUSED/);
    assert.deepEqual(
      logged.map((l) => [l.level, l.fields.backend]),
      [
        ['warn', 'broken'],
        ['warn', 'dead'],
      ],
    );
  });

  it('each call has a timeout (10 s by default)', async () => {
    assert.equal(GPU_SWITCH_TIMEOUT_MS, 10_000);
    const silent = await server(() => {}); // never answers
    const { sw, logged } = gpuSwitch(
      { box: { free_media: true } },
      [{ name: 'comfy', url: silent.url, type: 'comfyui' }],
      { timeoutMs: 150 },
    );
    const started = Date.now();
    const [call] = await sw.onSwitch(toLlm);
    assert.ok(Date.now() - started < 5_000);
    assert.equal(call.ok, false);
    assert.match(call.error!, /timeout|aborted/i);
    assert.equal(logged[0].level, 'warn');
  });

  it('a configuration that throws is logged, and onSwitch does not throw', async () => {
    const logged: string[] = [];
    const sw = new GpuSwitch({
      groups: () => {
        throw new Error('config gone');
      },
      members: () => [],
      log: { info: () => {}, warn: (_fields, message) => void logged.push(message) },
    });
    assert.deepEqual(await sw.onSwitch(toMedia), []);
    assert.equal(logged.length, 1);
  });

  it('uses the dispatcher given for the backend', async () => {
    const swap = await server(llamaSwap);
    const agent = new Agent();
    closers.push(() => agent.close());
    const asked: string[] = [];
    const { sw } = gpuSwitch({ box: { unload_llm: true } }, [{ name: 'swap', url: swap.url, type: 'openai' }], {
      dispatcherFor: (name, url) => {
        asked.push(`${name} ${url}`);
        return agent;
      },
    });
    const [call] = await sw.onSwitch(toMedia);
    assert.equal(call.ok, true);
    assert.deepEqual(asked, [`swap ${swap.url}`]);
  });
});

describe('gpu switch: as the scheduler’s onGroupSwitch hook', () => {
  it('an image job after LLM work unloads the llama-swap; LLM work after it frees the ComfyUI', async () => {
    const swap = await server(llamaSwap);
    const comfyUi = await server(comfy);
    const { sw } = gpuSwitch({ box: { unload_llm: true, free_media: true } }, [
      { name: 'swap', url: swap.url, type: 'openai' },
      { name: 'comfy', url: comfyUi.url, type: 'comfyui' },
    ]);
    const scheduler = new Scheduler({
      clock: new FakeClock(),
      maxParked: 10,
      affinityMaxWaitMs: 1_000,
      onGroupSwitch: sw.onSwitch,
    });
    scheduler.configureGroups({ box: { cap: 1 } });
    scheduler.upsertBackend({ name: 'swap', cap: 4, paid: false, available: true, group: 'box' });
    scheduler.upsertBackend({ name: 'comfy', cap: 1, paid: false, available: true, group: 'box', kind: 'media' });
    const take = (backend: string, model: string) => scheduler.tryAcquireNow([{ backend, model }], new Set())!;
    take('swap', 'qwen').release();
    await sw.pending('box');
    assert.equal(swap.seen.length + comfyUi.seen.length, 0, 'the first grant is no switch');
    take('comfy', 'sdxl').release();
    await sw.pending('box');
    assert.deepEqual(
      swap.seen.map((s) => `${s.method} ${s.path}`),
      ['POST /api/models/unload'],
    );
    take('swap', 'qwen').release();
    await sw.pending('box');
    assert.deepEqual(
      comfyUi.seen.map((s) => `${s.method} ${s.path}`),
      ['POST /free'],
    );
  });
});
