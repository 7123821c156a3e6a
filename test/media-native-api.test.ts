/**
 * The native generation API over sockets: `POST /v1/generations` sync (the settled job) and
 * async (202 + Location, then polling and the live event stream), exact big seeds, images by
 * base64 / data URI / URL, video and audio artifacts with their MIME types, the LoRA list,
 * and bad inputs — each a clear 4xx naming its param.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { JobView } from '../src/media/service-types.ts';
import { FAKE_MODELS } from './fakes/comfyui-nodes.ts';
import {
  bearer,
  call,
  MASTER,
  pngA,
  pollJob,
  readSse,
  startMediaRig,
  uploadsOf,
  isTerminal,
  type MediaRig,
} from './helpers/media-gateway.ts';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

/** A URL on a port nothing listens on (bound, then closed). */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  const url = await listen(server);
  await new Promise((r) => server.close(r));
  return url;
}

describe('the native generation API', () => {
  let rig: MediaRig;
  /** Serves a PNG at /a.png and 64 MiB + 1 byte at /huge. */
  let files: Server;
  let filesUrl = '';

  before(async () => {
    rig = await startMediaRig();
    files = createServer((req, res) => {
      if (req.url === '/a.png') {
        res.writeHead(200, { 'content-type': 'image/png' }).end(pngA);
      } else if (req.url === '/huge') {
        res.writeHead(200, { 'content-type': 'image/png' });
        const chunk = Buffer.alloc(1024 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent <= 64 && res.write(chunk)) sent++;
          if (sent > 64) res.end();
          else res.once('drain', pump);
        };
        res.on('error', () => {});
        pump();
      } else res.writeHead(404).end();
    });
    filesUrl = await listen(files);
  });
  after(async () => {
    await rig?.close();
    files?.closeAllConnections();
    await new Promise((r) => files?.close(r));
  });

  const generate = (body: unknown, key: string = MASTER) =>
    call<JobView & { job_id?: string; error?: any }>(rig.url, 'POST', '/v1/generations', key, body);

  test('sync: 200 with the settled job; results with kind, MIME and sha256; a big seed kept exact end to end', async () => {
    const seed = '9223372036854775807';
    const r = await generate(
      `{"model":"sd15","prompt":"an exact seed","params":{"seed":${seed},"width":640,"height":384}}`,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const job = r.body;
    assert.equal(job.object, 'generation.job');
    assert.equal(job.status, 'done');
    assert.equal(job.model, 'sd15');
    assert.equal(job.backend, 'comfy');
    assert.equal(job.seed, seed);
    assert.equal(job.prompt, 'an exact seed');
    assert.equal(job.results.length, 1);
    const [result] = job.results;
    assert.equal(result.kind, 'image');
    assert.equal(result.mime, 'image/png');
    assert.equal(result.url, `/v1/jobs/${job.id}/result/0`);
    const file = await fetch(`${rig.url}${result.url}`, { headers: bearer(MASTER) });
    const bytes = Buffer.from(await file.arrayBuffer());
    assert.equal(sha256(bytes), result.sha256);
    assert.equal(bytes.length, result.bytes);
    const sent = rig.comfy.requests.filter((q) => q.method === 'POST' && q.path === '/prompt').at(-1)!;
    assert.match(
      sent.rawBody.toString('utf8'),
      new RegExp(`"value":\\s*${seed}\\b`),
      'the seed reached ComfyUI as the exact integer',
    );
    assert.equal(rig.comfy.prompts.at(-1)!.prompt['146'].inputs.value, 640);
  });

  test('async: 202 with job_id and Location; polled to done; the event stream runs from the current state to done', async () => {
    rig.comfy.setKnobs({ stepMs: 40, steps: 6 });
    try {
      const r = await generate({ model: 'sd15', prompt: 'later', mode: 'async' });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const id = r.body.job_id!;
      assert.match(id, /^job_[0-9a-f]{32}$/);
      assert.equal(r.body.id, id);
      assert.ok(r.body.status === 'queued' || r.body.status === 'running');
      assert.equal(r.headers.get('location'), `/v1/jobs/${id}`);

      const events = await fetch(`${rig.url}/v1/jobs/${id}/events`, { headers: bearer(MASTER) });
      assert.equal(events.status, 200);
      assert.match(events.headers.get('content-type') ?? '', /^text\/event-stream/);
      const { frames, events: seen, ended } = await readSse(events);
      assert.ok(ended, 'the stream ends after the terminal event');
      const types = seen.map((e) => e.type);
      assert.ok(types.includes('progress'), types.join(','));
      assert.equal(types.at(-1), 'done');
      assert.equal(frames.filter((f) => f.data).at(-1)!.event, 'done');
      const last = seen.at(-1) as { type: 'done'; job: JobView };
      assert.equal(last.job.id, id);
      assert.equal(last.job.results.length, 1);
      const progress = seen.filter((e) => e.type === 'progress').map((e) => (e as { progress: number }).progress);
      assert.deepEqual(
        progress,
        [...progress].sort((a, b) => a - b),
        'progress only grows',
      );

      const polled = await pollJob(rig.url, id, MASTER, isTerminal);
      assert.equal(polled.status, 'done');
      assert.equal(polled.progress, 100);
      // a finished job's stream: its end at once
      const replay = await readSse(await fetch(`${rig.url}/v1/jobs/${id}/events`, { headers: bearer(MASTER) }));
      assert.deepEqual(
        replay.events.map((e) => e.type),
        ['done'],
      );
    } finally {
      rig.comfy.setKnobs({ stepMs: 20, steps: 4 });
    }
  });

  test('video: an image in `images` (base64) onto the Wan workflow → a video/mp4 result; the input is kept', async () => {
    const r = await generate({ model: 'wan', prompt: 'dancing', images: { image: pngA.toString('base64') } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'done', JSON.stringify(r.body.error));
    const [video] = r.body.results;
    assert.equal(video.kind, 'video');
    assert.equal(video.mime, 'video/mp4');
    const file = await fetch(`${rig.url}${video.url}`, { headers: bearer(MASTER) });
    assert.equal(file.headers.get('content-type'), 'video/mp4');
    assert.equal(
      Buffer.from(await file.arrayBuffer())
        .subarray(4, 8)
        .toString('latin1'),
      'ftyp',
    );
    const [input] = r.body.inputs;
    assert.equal(input.param, 'image');
    assert.equal(input.sha256, sha256(pngA));
    const kept = await fetch(`${rig.url}${input.url}`, { headers: bearer(MASTER) });
    assert.equal(kept.headers.get('content-type'), 'image/png');
    assert.ok(Buffer.from(await kept.arrayBuffer()).equals(pngA));
    assert.ok(
      uploadsOf(rig.comfy, pngA).some((name) => name.startsWith(`gw_${r.body.id}_`)),
      "uploaded under the job's name",
    );
  });

  test('audio: the stable audio workflow → an audio/flac result', async () => {
    const r = await generate({ model: 'audio', prompt: 'church bells, techno' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'done', JSON.stringify(r.body.error));
    const [audio] = r.body.results;
    assert.equal(audio.kind, 'audio');
    assert.equal(audio.mime, 'audio/flac');
    const file = await fetch(`${rig.url}${audio.url}`, { headers: bearer(MASTER) });
    assert.equal(file.headers.get('content-type'), 'audio/flac');
    assert.equal(
      Buffer.from(await file.arrayBuffer())
        .subarray(0, 4)
        .toString('latin1'),
      'fLaC',
    );
  });

  test('images by data URI and by URL', async () => {
    const byUri = await generate({
      model: 'inpaint',
      prompt: 'p',
      images: { image: `data:image/png;base64,${pngA.toString('base64')}` },
    });
    assert.equal(byUri.status, 200, JSON.stringify(byUri.body));
    assert.equal(byUri.body.inputs[0].sha256, sha256(pngA));
    const byUrl = await generate({ model: 'inpaint', prompt: 'p', images: { image: `${filesUrl}/a.png` } });
    assert.equal(byUrl.status, 200, JSON.stringify(byUrl.body));
    assert.equal(byUrl.body.inputs[0].sha256, sha256(pngA));
  });

  test('a failed job is answered too (sync): 200 with status failed and the reason', async (t) => {
    rig.comfy.setKnobs({ failNode: '124' });
    t.after(() => rig.comfy.setKnobs({ failNode: undefined }));
    const r = await generate({ model: 'sd15', prompt: 'doomed' });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'failed');
    assert.ok(r.body.error?.message);
  });

  test('the LoRAs of an alias; 404 for an unknown one', async () => {
    const r = await call<{ object: string; data: { id: string; object: string }[] }>(
      rig.url,
      'GET',
      '/v1/generations/sd15/loras',
      MASTER,
    );
    assert.equal(r.status, 200);
    assert.equal(r.body.object, 'list');
    assert.deepEqual(r.body.data.map((l) => l.id).sort(), FAKE_MODELS.loras.filter((l) => l !== 'None').sort());
    assert.ok(r.body.data.every((l) => l.object === 'lora'));
    const none = await call(rig.url, 'GET', '/v1/generations/nope/loras', MASTER);
    assert.equal(none.status, 404);
    assert.equal(none.body.error.type, 'not_found_error');
  });

  test('bad inputs: each a 4xx naming its param, nothing queued', async () => {
    const prompts = rig.comfy.prompts.length + rig.edit.prompts.length;
    const closed = await closedPortUrl();
    const cases: [unknown, number, string][] = [
      [{ model: 'sd15', prompt: 'p', params: { nonsense: 1 } }, 400, 'nonsense'],
      [{ model: 'sd15', prompt: 'p', params: { width: 'wide' } }, 400, 'width'],
      [{ model: 'sd15', prompt: 'p', params: [1] }, 400, 'params'],
      [{ model: 'sd15', prompt: 'p', seed: 1 }, 400, 'seed'],
      [{ model: 'sd15', prompt: 'p', mode: 'later' }, 400, 'mode'],
      [{ prompt: 'p' }, 400, 'model'],
      [{ model: 'sd15', prompt: 7 }, 400, 'prompt'],
      [{ model: 'nope', prompt: 'p' }, 404, 'model'],
      [{ model: 'inpaint', prompt: 'p', images: { picture: pngA.toString('base64') } }, 400, 'images.picture'],
      [{ model: 'inpaint', prompt: 'p', images: { image: 'not base64 at all!' } }, 400, 'images.image'],
      [{ model: 'inpaint', prompt: 'p', images: { image: 42 } }, 400, 'images.image'],
      [{ model: 'inpaint', prompt: 'p', images: { image: 'ftp://example.com/a.png' } }, 400, 'images.image'],
      [{ model: 'inpaint', prompt: 'p', images: { image: `${closed}/a.png` } }, 400, 'images.image'],
      [{ model: 'inpaint', prompt: 'p', images: { image: `${filesUrl}/missing.png` } }, 400, 'images.image'],
      [{ model: 'inpaint', prompt: 'p', images: { image: `${filesUrl}/huge` } }, 413, 'images.image'],
      [{ model: 'inpaint', prompt: 'p', files: { whatever: pngA.toString('base64') } }, 400, 'files.whatever'],
      [{ model: 'inpaint', prompt: 'p', images: { image: 'x' }, files: { image: 'y' } }, 400, 'files.image'],
    ];
    for (const [body, status, param] of cases) {
      const r = await generate(body);
      assert.equal(r.status, status, `${JSON.stringify(body).slice(0, 200)} → ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.param, param, `${JSON.stringify(body).slice(0, 200)} → ${JSON.stringify(r.body)}`);
      assert.equal(typeof r.body.error.message, 'string');
    }
    assert.equal(rig.comfy.prompts.length + rig.edit.prompts.length, prompts, 'no refused request reached a box');
    const logged = rig.gw.gateway.callLog.recent({ status: 413 });
    assert.ok(
      logged.some(
        (row) => row.endpoint === '/v1/generations' && row.backend === '(refused)' && row.requested_model === 'inpaint',
      ),
    );
  });
});
