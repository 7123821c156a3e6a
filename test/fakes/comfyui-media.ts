/**
 * The files the fake ComfyUI "renders": a real, decodable PNG (built with zlib) for images and
 * previews, and short byte blobs with the right magic bytes for video (mp4, webm), audio (flac,
 * mp3, opus) and meshes (a valid GLB header). Every file is derived from a seed string, so
 * different node inputs give different bytes and the same inputs the same bytes.
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function digest(seed: string): Buffer {
  return createHash('sha256').update(seed).digest();
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.from(type, 'latin1');
  return Buffer.concat([u32(data.length), head, data, u32(crc32(Buffer.concat([head, data])))]);
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A `size`×`size` RGB PNG whose pixels come from sha256(seed); `text` entries become tEXt
 * chunks (SaveImage writes the prompt there).
 */
export function fakePng(seed: string, opts: { size?: number; text?: Record<string, string> } = {}): Buffer {
  const size = opts.size ?? 8;
  const h = digest(seed);
  const raw = Buffer.alloc((size * 3 + 1) * size);
  for (let y = 0; y < size; y++) {
    const row = y * (size * 3 + 1);
    raw[row] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const i = (y * size + x) % 10;
      raw[row + 1 + x * 3] = h[i * 3]! ^ (x * 16);
      raw[row + 2 + x * 3] = h[i * 3 + 1]! ^ (y * 16);
      raw[row + 3 + x * 3] = h[i * 3 + 2]!;
    }
  }
  const ihdr = Buffer.concat([u32(size), u32(size), Buffer.from([8, 2, 0, 0, 0])]);
  const texts = Object.entries(opts.text ?? {}).map(([k, v]) => pngChunk('tEXt', Buffer.from(`${k}\0${v}`, 'latin1')));
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', ihdr),
    ...texts,
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

function box(type: string, payload: Buffer): Buffer {
  return Buffer.concat([u32(payload.length + 8), Buffer.from(type, 'latin1'), payload]);
}

export type MediaKind = 'png' | 'mp4' | 'webm' | 'flac' | 'mp3' | 'opus' | 'glb';

export const MEDIA_TYPES: Record<MediaKind, string> = {
  png: 'image/png',
  mp4: 'video/mp4',
  webm: 'video/webm',
  flac: 'audio/flac',
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  glb: 'model/gltf-binary',
};

/** A file of `kind` derived from `seed` (PNG: a real image; the others: right magic, hash payload). */
export function fakeMedia(kind: MediaKind, seed: string, text?: Record<string, string>): Buffer {
  const h = digest(seed);
  switch (kind) {
    case 'png':
      return fakePng(seed, { text });
    case 'mp4':
      return Buffer.concat([
        box(
          'ftyp',
          Buffer.concat([Buffer.from('isom', 'latin1'), u32(0x200), Buffer.from('isomiso2avc1mp41', 'latin1')]),
        ),
        box('free', Buffer.alloc(0)),
        box('mdat', h),
      ]);
    case 'webm':
      return Buffer.concat([
        Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84]),
        Buffer.from('webm', 'latin1'),
        h,
      ]);
    case 'flac':
      return Buffer.concat([Buffer.from('fLaC', 'latin1'), Buffer.from([0x80, 0x00, 0x00, 0x22]), h, Buffer.alloc(2)]);
    case 'mp3':
      return Buffer.concat([
        Buffer.from('ID3', 'latin1'),
        Buffer.from([4, 0, 0, 0, 0, 0, 0]),
        Buffer.from([0xff, 0xfb, 0x90, 0x64]),
        h,
      ]);
    case 'opus':
      return Buffer.concat([
        Buffer.from('OggS', 'latin1'),
        Buffer.from([0, 2]),
        Buffer.alloc(20),
        Buffer.from('OpusHead', 'latin1'),
        h,
      ]);
    case 'glb': {
      let json = JSON.stringify({
        asset: { version: '2.0', generator: `comfyui-fake ${h.toString('hex').slice(0, 16)}` },
        scenes: [{ nodes: [] }],
        scene: 0,
      });
      while (json.length % 4 !== 0) json += ' ';
      const chunk = Buffer.concat([u32le(json.length), Buffer.from('JSON', 'latin1'), Buffer.from(json, 'latin1')]);
      return Buffer.concat([Buffer.from('glTF', 'latin1'), u32le(2), u32le(12 + chunk.length), chunk]);
    }
  }
}

function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

export function contentTypeOf(filename: string): string {
  const ext = filename.split('.').pop()?.toLowerCase() ?? '';
  const byExt: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    webp: 'image/webp',
    gif: 'image/gif',
    mp4: 'video/mp4',
    webm: 'video/webm',
    flac: 'audio/flac',
    mp3: 'audio/mpeg',
    opus: 'audio/ogg',
    wav: 'audio/wav',
    glb: 'model/gltf-binary',
  };
  return byExt[ext] ?? 'application/octet-stream';
}
