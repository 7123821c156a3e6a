/**
 * The files of media jobs: results and inputs written with their digest and size, names from
 * MIME types, path checks, thumbnails cached beside their original, and the prune that removes
 * expired jobs' rows and files together.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { ArtifactError, Artifacts, extOf, kindOf, mimeOfExt } from '../src/media/jobs/artifacts.ts';
import { newJobId } from '../src/media/jobs/job-types.ts';
import { JobStore } from '../src/media/jobs/store.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const NOW = Date.UTC(2026, 2, 15, 12);
const tempDir = tempDirs('llmgw-artifacts-');

function png(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 4, background: { r: 200, g: 40, b: 40, alpha: 0.5 } } })
    .png()
    .toBuffer();
}

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

function rejectsWith(code: ArtifactError['code']) {
  return (err: unknown) => err instanceof ArtifactError && err.code === code;
}

describe('Artifacts', () => {
  test('a PNG result: <n>.png in the job folder, with its bytes, sha256 and dimensions', async () => {
    const dir = tempDir();
    const art = new Artifacts(dir);
    const id = newJobId();
    const bytes = await png(320, 200);
    const w = await art.write(id, 0, bytes, 'image/png');
    assert.deepEqual(w, { file: '0.png', bytes: bytes.length, sha256: sha256(bytes), width: 320, height: 200 });
    assert.deepEqual(readFileSync(join(dir, id, '0.png')), bytes);
    assert.deepEqual(await art.read(id, '0.png'), bytes);
    assert.deepEqual(await art.locate(id, '0.png'), {
      path: join(dir, id, '0.png'),
      size: bytes.length,
      mime: 'image/png',
    });
    assert.equal(await art.read(id, '1.png'), undefined, 'a missing file');

    const audio = Buffer.from('fLaC not really');
    assert.deepEqual(await art.write(id, 1, audio, 'audio/flac'), {
      file: '1.flac',
      bytes: audio.length,
      sha256: sha256(audio),
    });
    const broken = Buffer.from('not a png');
    assert.deepEqual(
      await art.write(id, 2, broken, 'image/png'),
      { file: '2.png', bytes: broken.length, sha256: sha256(broken) },
      'undecodable: no dimensions',
    );
  });

  test('inputs: in-<n>.<ext>, at inputPath', async () => {
    const dir = tempDir();
    const art = new Artifacts(dir);
    const id = newJobId();
    const bytes = await sharp(await png(10, 20))
      .jpeg()
      .toBuffer();
    const w = await art.writeInput(id, 3, bytes, 'image/jpeg');
    assert.deepEqual(w, { file: 'in-3.jpg', bytes: bytes.length, sha256: sha256(bytes), width: 10, height: 20 });
    assert.equal(art.inputPath(id, 3, 'image/jpeg'), join(dir, id, 'in-3.jpg'));
    assert.deepEqual(readFileSync(art.inputPath(id, 3, 'image/jpeg')), bytes);
    assert.deepEqual(await art.read(id, 'in-3.jpg'), bytes);
  });

  test('extension and kind from the MIME type', () => {
    const cases: [string, string, string][] = [
      ['image/png', 'png', 'image'],
      ['image/jpeg', 'jpg', 'image'],
      ['IMAGE/JPEG', 'jpg', 'image'],
      ['image/webp', 'webp', 'image'],
      ['image/gif', 'gif', 'image'],
      ['video/mp4', 'mp4', 'video'],
      ['video/webm; codecs="vp9"', 'webm', 'video'],
      ['audio/flac', 'flac', 'audio'],
      ['audio/wav', 'wav', 'audio'],
      ['audio/x-wav', 'wav', 'audio'],
      ['audio/mpeg', 'mp3', 'audio'],
      ['audio/ogg', 'ogg', 'audio'],
      ['audio/opus', 'opus', 'audio'],
      ['model/gltf-binary', 'glb', 'mesh'],
      ['model/fbx', 'fbx', 'mesh'],
      ['model/obj', 'obj', 'mesh'],
      ['application/x-whatever', 'bin', 'other'],
      ['', 'bin', 'other'],
      ['image/x-unknown', 'bin', 'image'],
    ];
    for (const [mime, ext, kind] of cases) {
      assert.equal(extOf(mime), ext, mime);
      assert.equal(kindOf(mime), kind, mime);
    }
    assert.equal(mimeOfExt('jpg'), 'image/jpeg');
    assert.equal(mimeOfExt('wav'), 'audio/wav');
    assert.equal(mimeOfExt('glb'), 'model/gltf-binary');
    assert.equal(mimeOfExt('nope'), 'application/octet-stream');
  });

  test('path traversal and crafted names are refused', async () => {
    const dir = tempDir();
    const art = new Artifacts(dir);
    const id = newJobId();
    await art.write(id, 0, Buffer.from('x'), 'application/octet-stream');
    writeFileSync(join(dir, 'secret.txt'), 'secret');
    for (const file of [
      '../x',
      '../secret.txt',
      '/etc/passwd',
      join(dir, 'secret.txt'),
      '0.bin/../../secret.txt',
      '..',
      '.',
      '',
      '0.png\0',
      'a.png',
      '0.PNG',
      '.0.bin.abc.tmp',
    ]) {
      await assert.rejects(art.read(id, file), rejectsWith('invalid_file'), JSON.stringify(file));
    }
    for (const jobId of [
      '..',
      '../' + id,
      id + '/..',
      'job_' + '0'.repeat(31),
      'job_' + 'G'.repeat(32),
      'jobs.db',
      '/tmp',
      `${id}/0.bin`,
    ]) {
      await assert.rejects(art.read(jobId, '0.bin'), rejectsWith('invalid_job_id'), jobId);
      await assert.rejects(art.write(jobId, 0, Buffer.from('x'), 'image/png'), rejectsWith('invalid_job_id'), jobId);
      await assert.rejects(art.remove(jobId), rejectsWith('invalid_job_id'), jobId);
    }
    assert.throws(() => art.inputPath('../x', 0, 'image/png'), rejectsWith('invalid_job_id'));
    for (const n of [-1, 1.5, 10_000, Number.NaN])
      await assert.rejects(art.write(id, n, Buffer.from('x'), 'image/png'), rejectsWith('invalid_file'), String(n));
    assert.equal(readFileSync(join(dir, 'secret.txt'), 'utf8'), 'secret');
  });

  test('a symlink leading out of the job folder is refused, in the folder or as the folder', async () => {
    const dir = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, 'secret.png'), 'secret');
    const art = new Artifacts(dir);
    const id = newJobId();
    await art.write(id, 0, await png(4, 4), 'image/png');
    symlinkSync(join(outside, 'secret.png'), join(dir, id, '1.png'));
    await assert.rejects(art.read(id, '1.png'), rejectsWith('unsafe_path'));
    await assert.rejects(art.thumbnail(id, 1, { format: 'webp' }), rejectsWith('unsafe_path'));

    const linked = newJobId();
    mkdirSync(join(outside, 'job'));
    writeFileSync(join(outside, 'job', '0.png'), await png(4, 4));
    symlinkSync(join(outside, 'job'), join(dir, linked));
    await assert.rejects(art.read(linked, '0.png'), rejectsWith('unsafe_path'));
    await assert.rejects(art.write(linked, 1, Buffer.from('x'), 'image/png'), rejectsWith('unsafe_path'));
    assert.equal(existsSync(join(outside, 'job', '1.png')), false, 'nothing written through the link');
    await art.remove(linked);
    assert.equal(existsSync(join(outside, 'job', '0.png')), true, 'remove took the link, not its target');
  });

  test('a thumbnail is made once, cached beside the original, and reused', async () => {
    const dir = tempDir();
    const art = new Artifacts(dir);
    const id = newJobId();
    await art.write(id, 0, await png(1024, 512), 'image/png');
    const t1 = await art.thumbnail(id, 0, { format: 'webp' });
    assert.equal(t1.file, '0.w256.webp');
    assert.equal(t1.mime, 'image/webp');
    const path = join(dir, id, '0.w256.webp');
    const meta = await sharp(readFileSync(path)).metadata();
    assert.deepEqual(
      { format: meta.format, width: meta.width, height: meta.height },
      { format: 'webp', width: 256, height: 128 },
    );
    const mtime = statSync(path).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    const t2 = await art.thumbnail(id, 0, { format: 'webp', w: 256 });
    assert.deepEqual(t2, t1);
    assert.equal(statSync(path).mtimeMs, mtime, 'served from the cached file');

    const [a, b] = await Promise.all([
      art.thumbnail(id, 0, { format: 'png', h: 64 }),
      art.thumbnail(id, 0, { format: 'png', h: 64 }),
    ]);
    assert.deepEqual(a, b);
    assert.equal(a.file, '0.h64.png');
    const jpeg = await art.thumbnail(id, 0, { format: 'jpeg', w: 100, h: 100 });
    assert.equal(jpeg.file, '0.w100h100.jpg');
    assert.equal(jpeg.mime, 'image/jpeg');
    const jm = await sharp(jpeg.data).metadata();
    assert.deepEqual(
      { format: jm.format, width: jm.width, height: jm.height },
      { format: 'jpeg', width: 100, height: 50 },
    );
    const big = await sharp((await art.thumbnail(id, 0, { format: 'png', w: 2048 })).data).metadata();
    assert.equal(big.width, 1024, 'never enlarged');
    assert.deepEqual(await art.read(id, '0.w100h100.jpg'), jpeg.data, 'a thumbnail is a readable file of the job');
  });

  test('thumbnail sizes are limited; non-images and missing results are refused', async () => {
    const dir = tempDir();
    const art = new Artifacts(dir);
    const id = newJobId();
    await art.write(id, 0, await png(8, 8), 'image/png');
    await art.write(id, 1, Buffer.from('mp4'), 'video/mp4');
    for (const opts of [{ w: 2049 }, { h: 4096 }, { w: 0 }, { w: -5 }, { w: 12.5 }, { w: Number.NaN }]) {
      await assert.rejects(
        art.thumbnail(id, 0, { format: 'webp', ...opts }),
        rejectsWith('invalid_size'),
        JSON.stringify(opts),
      );
    }
    await assert.rejects(art.thumbnail(id, 0, { format: 'tiff' as 'png' }), rejectsWith('invalid_file'));
    await assert.rejects(art.thumbnail(id, 1, { format: 'webp' }), rejectsWith('not_an_image'));
    await assert.rejects(art.thumbnail(id, 2, { format: 'webp' }), rejectsWith('not_found'));
    await assert.rejects(art.thumbnail(newJobId(), 0, { format: 'webp' }), rejectsWith('not_found'));
  });

  test('prune removes expired jobs: rows and files; the rest stays', async (t) => {
    const dir = tempDir();
    const store = JobStore.open(dir);
    t.after(() => store.close());
    const art = new Artifacts(dir);
    const old = store.create({
      owner: 'user:1',
      alias: 'sdxl',
      request: { params: {} },
      createdAt: NOW,
      expiresAt: NOW + 1000,
    });
    const fresh = store.create({
      owner: 'user:1',
      alias: 'sdxl',
      request: { params: {} },
      createdAt: NOW,
      expiresAt: NOW + 5000,
    });
    for (const j of [old, fresh]) {
      const w = await art.write(j.id, 0, await png(16, 16), 'image/png');
      store.addResult(j.id, { n: 0, kind: 'image', mime: 'image/png', ...w });
      const i = await art.writeInput(j.id, 0, Buffer.from('mask'), 'image/png');
      store.addInput(j.id, { n: 0, param: 'mask', mime: 'image/png', ...i });
      await art.thumbnail(j.id, 0, { format: 'webp' });
    }
    assert.equal(await art.prune(store, NOW + 999), 0);
    assert.equal(await art.prune(store, NOW + 1000), 1);
    assert.equal(store.get(old.id, 0), undefined);
    assert.deepEqual(store.results(old.id), []);
    assert.deepEqual(store.inputs(old.id), []);
    assert.equal(existsSync(join(dir, old.id)), false, 'its folder is gone');
    assert.ok(store.get(fresh.id, NOW));
    assert.equal(store.results(fresh.id).length, 1);
    assert.ok(existsSync(join(dir, fresh.id, '0.png')));
    assert.ok(existsSync(join(dir, 'jobs.db')));
    await art.remove(fresh.id);
    await art.remove(fresh.id); // twice is fine
    assert.equal(existsSync(join(dir, fresh.id)), false);
  });
});
