/**
 * Client values → files: base64 (plain, wrapped, URL-safe), data URIs (the sniffed type wins
 * over the declared one), http URLs (a real server on 127.0.0.1), refusals naming the param,
 * size caps; sniffing on real image headers made by sharp and on audio/video/mesh prefixes;
 * decodeFileMap's validation, concurrency, total cap and cancellation of sibling fetches.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { GatewayError } from '../src/errors.ts';
import { extOf } from '../src/media/jobs/artifacts.ts';
import {
  decodeFileMap,
  decodeMediaValue,
  MediaInputError,
  requireKind,
  type FetchOptions,
} from '../src/media/inputs/files.ts';
import { sniffMime } from '../src/media/inputs/sniff.ts';

const OPTS: FetchOptions = { allowPrivate: true, maxBytes: 1024 * 1024, timeoutMs: 5_000 };

async function refused(p: Promise<unknown>, status: number, param: string, message?: RegExp): Promise<MediaInputError> {
  const err = await p.then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof MediaInputError, `a MediaInputError, got ${String(err)}`);
  assert.equal(err.status, status, err.message);
  assert.equal(err.param, param, err.message);
  if (message) assert.match(err.message, message);
  return err;
}

const image = (format: 'png' | 'jpeg' | 'webp' | 'gif' | 'tiff' | 'avif') =>
  sharp({ create: { width: 8, height: 8, channels: 3, background: '#36c' } })
    .toFormat(format)
    .toBuffer();

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

describe('sniffMime', () => {
  test('images made by sharp', async () => {
    for (const [format, mime] of [
      ['png', 'image/png'],
      ['jpeg', 'image/jpeg'],
      ['webp', 'image/webp'],
      ['gif', 'image/gif'],
      ['tiff', 'image/tiff'],
      ['avif', 'image/avif'],
    ] as const) {
      assert.equal(sniffMime(await image(format)), mime, format);
    }
  });

  test('BMP, audio, video and mesh headers', () => {
    const le32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24];
    const cases: [Buffer, string][] = [
      [bytes('BM', le32(70), [0, 0, 0, 0], le32(54), le32(40), le32(1), le32(1)), 'image/bmp'],
      [bytes('RIFF', le32(36), 'WAVEfmt '), 'audio/wav'],
      [bytes('ID3', [4, 0, 0, 0, 0, 0, 0]), 'audio/mpeg'],
      [bytes([0xff, 0xfb, 0x90, 0x64, 0, 0]), 'audio/mpeg'], // MPEG-1 layer III, 128 kbit/s, 44.1 kHz
      [bytes([0xff, 0xf3, 0x48, 0xc4, 0, 0]), 'audio/mpeg'], // MPEG-2 layer III
      [bytes([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f]), 'audio/aac'], // ADTS
      [bytes('fLaC', [0, 0, 0, 0x22]), 'audio/flac'],
      [bytes('OggS', [0, 2, 0, 0, 0, 0]), 'audio/ogg'],
      [bytes([0, 0, 0, 0x20], 'ftypisom', [0, 0, 2, 0], 'isomiso2'), 'video/mp4'],
      [bytes([0, 0, 0, 0x18], 'ftypmp42', [0, 0, 0, 0]), 'video/mp4'],
      [bytes([0, 0, 0, 0x14], 'ftypqt  ', [0, 0, 2, 0]), 'video/quicktime'],
      [bytes([0, 0, 0, 0x08], 'wide', [0, 0, 0, 0]), 'video/quicktime'],
      [bytes([0, 0, 0, 0x20], 'ftypM4A ', [0, 0, 0, 0]), 'audio/mp4'],
      [bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84], 'webm'), 'video/webm'],
      [bytes([0x1a, 0x45, 0xdf, 0xa3, 0xa3, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x88], 'matroska'), 'video/x-matroska'],
      [bytes('glTF', le32(2), le32(1000)), 'model/gltf-binary'],
      [bytes('Kaydara FBX Binary  \0', [0x1a, 0, 0xe8, 0x1c, 0, 0]), 'model/fbx'],
      [bytes('ply\nformat binary_little_endian 1.0\n'), 'model/ply'],
    ];
    for (const [b, mime] of cases) assert.equal(sniffMime(b), mime, mime);
  });

  test('no guess for text formats, unknown or short bytes, and no false MP3 on a JPEG-like or BM-like start', () => {
    for (const b of [
      bytes('v 0 0 0\nv 1 0 0\nf 1 2 3\n'),
      bytes('{"asset":{"version":"2.0"}}'),
      bytes('hello world'),
      bytes([1, 2]),
      Buffer.alloc(0),
      bytes([0xff, 0xd8]),
      bytes('BMW is a car maker'),
      bytes('RIFF', [0, 0, 0, 0], 'AVI '),
      bytes([0xff, 0xff, 0xff, 0xff]),
    ]) {
      assert.equal(sniffMime(b), undefined, b.toString('latin1'));
    }
  });

  test("every sniffed type has an extension in artifacts.ts's extOf (no duplicate table)", () => {
    for (const mime of [
      'image/png',
      'image/jpeg',
      'image/webp',
      'image/gif',
      'image/bmp',
      'image/tiff',
      'image/avif',
      'audio/wav',
      'audio/mpeg',
      'audio/aac',
      'audio/flac',
      'audio/ogg',
      'audio/mp4',
      'video/mp4',
      'video/quicktime',
      'video/webm',
      'video/x-matroska',
      'model/gltf-binary',
      'model/fbx',
      'model/ply',
    ]) {
      assert.notEqual(extOf(mime), 'bin', mime);
    }
  });
});

describe('requireKind', () => {
  const file = (b: Buffer, mime = 'image/png') => ({ bytes: b, mime });
  test('a file passes when its bytes are the kind its input loads, whatever type was declared', async () => {
    const png = await sharp({ create: { width: 2, height: 2, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    requireKind(file(png, 'application/octet-stream'), 'image', 'image');
    requireKind(file(bytes('OggS', [0, 2, 0, 0, 0, 0])), 'audio', 'audio');
    requireKind(file(bytes([0, 0, 0, 0x20], 'ftypisom', [0, 0, 2, 0], 'isomiso2')), 'audio', 'audio'); // the audio of a video
    requireKind(file(bytes('GIF89a', [1, 0, 1, 0])), 'video', 'video'); // an animation
    requireKind(file(bytes('RIFF', [0, 0, 0, 0], 'AVI LIST')), 'video', 'video');
  });

  test('anything else is a 400 invalid_file naming the param and what the bytes are, no content', () => {
    const cases: [Buffer, 'image' | 'audio' | 'video', RegExp][] = [
      [bytes('# HELP gateway_calls_total secret stuff\n'), 'image', /no known image format/],
      [bytes('OggS', [0, 2, 0, 0, 0, 0]), 'image', /audio\/ogg/],
      [bytes([0x89], 'PNG', [0x0d, 0x0a, 0x1a, 0x0a]), 'audio', /image\/png/],
      [bytes('{"json": true}'), 'video', /no known video format/],
    ];
    for (const [b, kind, shows] of cases) {
      assert.throws(
        () => requireKind(file(b), kind, 'images.init'),
        (err: unknown) => {
          assert.ok(err instanceof MediaInputError);
          assert.equal(err.status, 400);
          assert.equal(err.code, 'invalid_file');
          assert.equal(err.param, 'images.init');
          assert.match(err.message, shows);
          assert.doesNotMatch(err.message, /secret|json/);
          return true;
        },
      );
    }
  });
});

describe('decodeMediaValue', () => {
  let png: Buffer;
  let jpeg: Buffer;
  let server: Server;
  let base: string;

  before(async () => {
    png = await image('png');
    jpeg = await image('jpeg');
    server = createServer((req, res) => {
      if (req.url === '/a.jpg') return void res.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );

  test('plain base64, wrapped at 76 columns, URL-safe without padding', async () => {
    const b64 = png.toString('base64');
    assert.deepEqual(await decodeMediaValue(b64, 'images.a', OPTS), { bytes: png, mime: 'image/png' });
    const wrapped = `\n  ${b64.replace(/.{76}/g, '$&\r\n')}  \n`;
    assert.deepEqual(await decodeMediaValue(wrapped, 'images.a', OPTS), { bytes: png, mime: 'image/png' });
    const urlSafe = png.toString('base64url');
    assert.deepEqual(await decodeMediaValue(urlSafe, 'images.a', OPTS), { bytes: png, mime: 'image/png' });
    assert.deepEqual(await decodeMediaValue(Buffer.from('plain words').toString('base64'), 'files.t', OPTS), {
      bytes: Buffer.from('plain words'),
      mime: 'application/octet-stream',
    });
  });

  test('data URIs: sniffed type first, the declared one as the fallback', async () => {
    assert.deepEqual(await decodeMediaValue(`data:image/jpeg;base64,${png.toString('base64')}`, 'images.a', OPTS), {
      bytes: png,
      mime: 'image/png',
    });
    assert.deepEqual(await decodeMediaValue(`DATA:image/png;BASE64,${jpeg.toString('base64')}`, 'images.a', OPTS), {
      bytes: jpeg,
      mime: 'image/jpeg',
    });
    const obj = Buffer.from('v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n');
    assert.deepEqual(await decodeMediaValue(`data:model/obj;base64,${obj.toString('base64')}`, 'files.mesh', OPTS), {
      bytes: obj,
      mime: 'model/obj',
    });
    assert.equal(
      (await decodeMediaValue(`data:;base64,${obj.toString('base64')}`, 'files.mesh', OPTS)).mime,
      'application/octet-stream',
    );
    assert.equal(
      (await decodeMediaValue(`data:model/obj;name=a.obj;base64,${obj.toString('base64')}`, 'files.mesh', OPTS)).mime,
      'model/obj',
    );
  });

  test('http URLs are fetched (sniffed)', async () => {
    assert.deepEqual(await decodeMediaValue(` ${base}/a.jpg `, 'images.a', OPTS), { bytes: jpeg, mime: 'image/jpeg' });
    await refused(
      decodeMediaValue(`${base}/missing.png`, 'images.a', OPTS),
      400,
      'images.a',
      /^could not fetch images\.a: the server answered 404/,
    );
  });

  test('refusals name the param and say what to send', async () => {
    const cases: [unknown, RegExp][] = [
      [42, /images\.a must be a string \(base64, a data: URI or an http\(s\) URL\), not a number/],
      [{ url: 'x' }, /not an object/],
      [null, /not null/],
      [['a'], /not an array/],
      [true, /not a boolean/],
      ['', /images\.a is empty/],
      ['   \n', /is empty/],
      ['file:///etc/passwd', /images\.a is a file: URL; send base64, a data: URI or an http\(s\) URL/],
      ['ftp://example.com/a.png', /ftp: URL/],
      ['javascript:alert(1)', /javascript: URL/],
      ['not base64 at all!', /not valid base64/],
      ['abcde', /not valid base64/],
      ['ab=c', /not valid base64/],
      ['abc===', /not valid base64/],
      ['data:image/png,%89PNG', /data: URI that is not base64/],
      ['data:image/png;base64', /no comma/],
      ['data:image/png;base64,', /holds no data/],
      ['data:image/png;base64,@@@@', /not valid base64/],
    ];
    for (const [value, message] of cases) {
      const e = await refused(decodeMediaValue(value, 'images.a', OPTS), 400, 'images.a', message);
      // a GatewayError: the error handler renders it as is
      assert.ok(e instanceof GatewayError);
      assert.deepEqual(e.toOpenAI(), {
        error: { message: e.message, type: 'invalid_request_error', param: 'images.a', code: e.code },
      });
    }
  });

  test('over maxBytes: 413 before decoding, for base64, data URIs and URLs', async () => {
    const big = Buffer.alloc(2048, 1).toString('base64');
    const small = { ...OPTS, maxBytes: 1024 };
    await refused(
      decodeMediaValue(big, 'files.x', small),
      413,
      'files.x',
      /files\.x is larger than the 1 KiB a file may be/,
    );
    await refused(decodeMediaValue(`data:image/png;base64,${big}`, 'files.x', small), 413, 'files.x');
    await refused(decodeMediaValue(`${base}/a.jpg`, 'files.x', { ...OPTS, maxBytes: 100 }), 413, 'files.x');
    // exactly at the cap is fine
    assert.equal(
      (await decodeMediaValue(Buffer.alloc(1024, 2).toString('base64'), 'files.x', small)).bytes.length,
      1024,
    );
  });
});

describe('decodeFileMap', () => {
  let png: Buffer;
  let server: Server;
  let base: string;
  let hangClosed = 0;
  let inFlight = 0;
  let maxInFlight = 0;

  before(async () => {
    png = await image('png');
    server = createServer((req, res) => {
      if (req.url?.startsWith('/slow')) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        return void setTimeout(() => {
          inFlight--;
          res.writeHead(200).end(png);
        }, 150);
      }
      if (req.url === '/hang') return void res.on('close', () => hangClosed++);
      if (req.url === '/late404') return void setTimeout(() => res.writeHead(404).end(), 100);
      if (req.url === '/600') return void res.writeHead(200).end(Buffer.alloc(600, 9));
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );

  const allowed = new Set(['init_image', 'mask', 'style']);

  test('absent maps are empty; anything but an object is a 400 naming the field', async () => {
    assert.deepEqual(await decodeFileMap(undefined, allowed, 'images', OPTS), {});
    assert.deepEqual(await decodeFileMap(null, allowed, 'images', OPTS), {});
    for (const bad of ['abc', 12, ['a'], true]) {
      await refused(
        decodeFileMap(bad, allowed, 'images', OPTS),
        400,
        'images',
        /^'images' must be an object of input name → file/,
      );
    }
    await refused(decodeFileMap('x', undefined, 'files', OPTS), 400, 'files', /^'files' must be an object/);
  });

  test('unknown keys are refused, naming what the model takes', async () => {
    const e = await refused(
      decodeFileMap({ init_image: png.toString('base64'), bogus: 'x' }, allowed, 'images', OPTS),
      400,
      'images.bogus',
    );
    assert.equal(e.message, "'bogus' is not a file input of this model; its file inputs: init_image, mask, style");
    await refused(
      decodeFileMap({ a: 'x' }, new Set(), 'files', OPTS),
      400,
      'files.a',
      /^'a' is not a file input of this model; it takes no files$/,
    );
  });

  test('decodes every form, concurrently; a bad value names its key', async () => {
    maxInFlight = 0;
    const t0 = performance.now();
    const out = await decodeFileMap(
      {
        init_image: `${base}/slow/1`,
        style: `${base}/slow/2`,
        mask: `data:image/png;base64,${png.toString('base64')}`,
      },
      allowed,
      'images',
      OPTS,
    );
    assert.deepEqual(Object.keys(out).sort(), ['init_image', 'mask', 'style']);
    for (const f of Object.values(out)) assert.deepEqual(f, { bytes: png, mime: 'image/png' });
    assert.equal(maxInFlight, 2, 'both URLs fetched at once');
    assert.ok(performance.now() - t0 < 290, 'in about one fetch time, not two');
    await refused(
      decodeFileMap({ init_image: png.toString('base64'), mask: 7 }, allowed, 'images', OPTS),
      400,
      'images.mask',
      /images\.mask must be a string/,
    );
    // without an allow-list any key goes (files are strict only when the caller passes its set)
    assert.deepEqual(Object.keys(await decodeFileMap({ anything: png.toString('base64') }, undefined, 'files', OPTS)), [
      'anything',
    ]);
  });

  test('the first failure cancels the fetches still running', async () => {
    const closed = hangClosed;
    const t0 = performance.now();
    await refused(
      decodeFileMap({ init_image: `${base}/hang`, mask: `${base}/late404` }, allowed, 'images', OPTS),
      400,
      'images.mask',
      /answered 404/,
    );
    for (let i = 0; i < 100 && hangClosed === closed; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(hangClosed, closed + 1, 'the hanging fetch was aborted');
    assert.ok(performance.now() - t0 < 2_000);
  });

  test('the total is capped at four times maxBytes (413 naming the field), each file at maxBytes', async () => {
    const opts = { ...OPTS, maxBytes: 1000 };
    const v = Buffer.alloc(900, 3).toString('base64');
    const five = { a: v, b: v, c: v, d: v, e: v };
    const e = await refused(
      decodeFileMap(five, undefined, 'files', opts),
      413,
      'files',
      /the files of this request are larger than 3\.9 KiB together/,
    );
    assert.equal(e.code, 'files_too_large');
    assert.equal(Object.keys(await decodeFileMap({ a: v, b: v, c: v, d: v }, undefined, 'files', opts)).length, 4);
    await refused(
      decodeFileMap({ a: Buffer.alloc(1001).toString('base64') }, undefined, 'files', opts),
      413,
      'files.a',
    );
    // fetched bytes count toward the total too
    await refused(
      decodeFileMap({ a: v, b: v, c: v, d: v, e: `${base}/600` }, undefined, 'files', opts),
      413,
      'files',
      /together/,
    );
    assert.equal(
      Object.keys(await decodeFileMap({ a: v, b: v, c: v, e: `${base}/600` }, undefined, 'files', opts)).length,
      4,
    );
  });

  test('a __proto__ key stays an own key and pollutes nothing', async () => {
    const map = JSON.parse(`{"__proto__": "${png.toString('base64')}"}`) as unknown;
    const out = await decodeFileMap(map, undefined, 'files', OPTS);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.ok(Object.hasOwn(out, '__proto__'));
    assert.equal(out['__proto__'].mime, 'image/png');
    assert.equal(({} as Record<string, unknown>).mime, undefined);
  });
});
