/**
 * Turning what a client sends for a file input into bytes: a base64 string (whitespace
 * tolerated, standard or URL-safe alphabet), a `data:<mime>;base64,…` URI, or an http(s) URL
 * (fetched by fetch-ref.ts). Anything else is a 400 naming the param; more than the cap a
 * 413. The MIME type is sniffed from the bytes (magic numbers); a data URI's declared type is
 * used only when sniffing finds nothing. File extensions come from artifacts.ts's `extOf`.
 */
import { isObject } from '../../json.ts';
import type { FileKind } from '../compiler/index.ts';
import type { MediaFile } from '../service-types.ts';
import { byteBudget, DEFAULT_MAX_BYTES, fetchRef, type ByteBudget, type FetchOptions } from './fetch.ts';
import { formatBytes, MediaInputError, tooLarge } from './errors.ts';

export { MediaInputError } from './errors.ts';
export type { FetchOptions } from './fetch.ts';

/** How many entries one `images` / `files` map may have. */
export const MAX_FILE_ENTRIES = 32;

const OCTET = 'application/octet-stream';

// ---------------------------------------------------------------------------------------------
// Sniffing

const ascii = (b: Uint8Array, at: number, text: string): boolean => {
  if (b.length < at + text.length) return false;
  for (let i = 0; i < text.length; i++) if (b[at + i] !== text.charCodeAt(i)) return false;
  return true;
};

const startsWith = (b: Uint8Array, bytes: number[]): boolean =>
  b.length >= bytes.length && bytes.every((x, i) => b[i] === x);

/** ISO-BMFF (`ftyp` box) brands that are not plain video. */
const FTYP_BRANDS: Record<string, string> = {
  'qt  ': 'video/quicktime',
  'M4A ': 'audio/mp4',
  'M4B ': 'audio/mp4',
  'M4P ': 'audio/mp4',
  'F4A ': 'audio/mp4',
  avif: 'image/avif',
  avis: 'image/avif',
  heic: 'image/heic',
  heix: 'image/heic',
  heim: 'image/heic',
  heis: 'image/heic',
  mif1: 'image/heif',
  msf1: 'image/heif',
};

/** BMP info-header sizes (BITMAPCOREHEADER … BITMAPV5HEADER): "BM" alone is too weak a signature. */
const BMP_DIB_SIZES = new Set([12, 16, 40, 52, 56, 64, 108, 124]);

/**
 * The MIME type the leading bytes announce, or undefined: PNG, JPEG, GIF, WebP, BMP, TIFF,
 * AVIF/HEIC, WAV, MP3 (ID3 tag or MPEG frame sync), AAC (ADTS), FLAC, Ogg, MP4/MOV/M4A
 * (`ftyp`), old QuickTime atoms, WebM/Matroska, GLB, binary FBX, PLY. Text formats without a
 * signature (OBJ, glTF JSON, ASCII STL) stay undefined.
 */
export function sniffMime(bytes: Uint8Array): string | undefined {
  const b = bytes;
  if (b.length < 4) return undefined;
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(b, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a')) return 'image/gif';
  if (ascii(b, 0, 'RIFF')) {
    if (ascii(b, 8, 'WEBP')) return 'image/webp';
    if (ascii(b, 8, 'WAVE')) return 'audio/wav';
    return undefined;
  }
  if (
    ascii(b, 0, 'BM') &&
    b.length >= 18 &&
    b[6] === 0 &&
    b[7] === 0 &&
    b[8] === 0 &&
    b[9] === 0 &&
    BMP_DIB_SIZES.has(b[14] | (b[15] << 8) | (b[16] << 16) | (b[17] << 24))
  )
    return 'image/bmp';
  if (startsWith(b, [0x49, 0x49, 0x2a, 0x00]) || startsWith(b, [0x4d, 0x4d, 0x00, 0x2a])) return 'image/tiff';
  if (ascii(b, 0, 'fLaC')) return 'audio/flac';
  if (ascii(b, 0, 'OggS')) return 'audio/ogg';
  if (ascii(b, 0, 'ID3')) return 'audio/mpeg';
  if (ascii(b, 0, 'glTF')) return 'model/gltf-binary';
  if (ascii(b, 0, 'Kaydara FBX Binary')) return 'model/fbx';
  if (ascii(b, 0, 'ply\n') || ascii(b, 0, 'ply\r\n')) return 'model/ply';
  if (startsWith(b, [0x1a, 0x45, 0xdf, 0xa3])) {
    // EBML: the DocType (element 0x4282) says webm or matroska
    const head = Buffer.from(b.buffer, b.byteOffset, Math.min(b.length, 64)).toString('latin1');
    return head.includes('webm') ? 'video/webm' : 'video/x-matroska';
  }
  if (b.length >= 12 && ascii(b, 4, 'ftyp')) {
    const brand = String.fromCharCode(b[8], b[9], b[10], b[11]);
    return FTYP_BRANDS[brand] ?? 'video/mp4';
  }
  if (b.length >= 8 && (ascii(b, 4, 'moov') || ascii(b, 4, 'mdat') || ascii(b, 4, 'wide'))) return 'video/quicktime';
  if (b[0] === 0xff && (b[1] & 0xe0) === 0xe0) {
    const version = (b[1] >> 3) & 0x03; // 01 is reserved
    const layer = (b[1] >> 1) & 0x03; // 00: ADTS (AAC); else MPEG audio layer III/II/I
    if (layer === 0) return (b[1] & 0xf6) === 0xf0 ? 'audio/aac' : undefined;
    const bitrate = b[2] >> 4;
    const rate = (b[2] >> 2) & 0x03;
    if (version !== 1 && bitrate !== 0x0f && rate !== 0x03) return 'audio/mpeg';
  }
  return undefined;
}

/** Sniffed types a file input of each kind loads besides `<kind>/*` (animated images as video). */
const ALSO_ACCEPTED: Record<FileKind, ReadonlySet<string>> = {
  image: new Set(),
  audio: new Set(['video/mp4', 'video/webm', 'video/quicktime']),
  video: new Set(['image/gif', 'image/webp']),
};

/**
 * Refuses (400 `invalid_file`, naming `param`) a file whose bytes are not the `kind` of media
 * its input loads, sniffed from the bytes whatever the client or the server it came from
 * declared: a text page fetched for an image slot is never stored, sent to a box nor served back.
 */
export function requireKind(file: MediaFile, kind: FileKind, param: string): void {
  const sniffed = sniffMime(file.bytes);
  if (sniffed && (sniffed.startsWith(`${kind}/`) || ALSO_ACCEPTED[kind].has(sniffed))) return;
  // AVI is not sniffed (nothing here makes or shows one), yet video loaders read it
  if (kind === 'video' && ascii(file.bytes, 0, 'RIFF') && ascii(file.bytes, 8, 'AVI ')) return;
  const shows = sniffed ? `its bytes are ${sniffed}` : `its bytes show no known ${kind} format`;
  const article = kind === 'image' || kind === 'audio' ? 'an' : 'a';
  throw new MediaInputError(400, param, 'invalid_file', `${param} must be ${article} ${kind} file; ${shows}.`);
}

// ---------------------------------------------------------------------------------------------
// One value

/**
 * One client value → a file. `param` names it in errors (`images.init`, `files.audio`).
 * URLs are fetched with `opts` (http(s) only, the private-address rule, size and time caps).
 */
export async function decodeMediaValue(value: unknown, param: string, opts: FetchOptions): Promise<MediaFile> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  if (typeof value !== 'string') {
    throw invalid(param, `${param} must be a string (base64, a data: URI or an http(s) URL), not ${describe(value)}`);
  }
  const text = value.trim();
  if (text === '') throw invalid(param, `${param} is empty; send base64, a data: URI or an http(s) URL`);
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text.slice(0, 40))?.[1]?.toLowerCase();
  if (scheme === 'http' || scheme === 'https') return fetchRef(text, opts, param);
  if (scheme === 'data') return decodeDataUri(text, param, maxBytes, opts.budget);
  if (scheme !== undefined) {
    throw new MediaInputError(
      400,
      param,
      'unsupported_url',
      `${param} is a ${scheme}: URL; send base64, a data: URI or an http(s) URL`,
    );
  }
  const bytes = decodeBase64(text, param, maxBytes, opts.budget);
  return { bytes, mime: sniffMime(bytes) ?? OCTET };
}

function decodeDataUri(text: string, param: string, maxBytes: number, budget: ByteBudget | undefined): MediaFile {
  const comma = text.indexOf(',');
  if (comma < 0) throw invalid(param, `${param} is not a valid data: URI (no comma before the data)`);
  const meta = text
    .slice(5, comma)
    .split(';')
    .map((s) => s.trim());
  if (meta.length < 2 || meta[meta.length - 1].toLowerCase() !== 'base64') {
    throw invalid(param, `${param} is a data: URI that is not base64; send data:<mime>;base64,<data>`);
  }
  const declared = meta[0].toLowerCase();
  const bytes = decodeBase64(text.slice(comma + 1), param, maxBytes, budget);
  const fallback = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(declared) ? declared : OCTET;
  return { bytes, mime: sniffMime(bytes) ?? fallback };
}

const BASE64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Base64 (standard or URL-safe, padded or not, whitespace anywhere) → bytes; the size is checked before decoding. */
function decodeBase64(input: string, param: string, maxBytes: number, budget: ByteBudget | undefined): Buffer {
  const text = /\s/.test(input) ? input.replace(/\s+/g, '') : input;
  if (text === '') throw invalid(param, `${param} holds no data`);
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const chars = text.length - padding;
  if (!BASE64_RE.test(text) || chars % 4 === 1 || (padding > 0 && text.length % 4 !== 0)) {
    throw invalid(param, `${param} is not valid base64, a data: URI or an http(s) URL`);
  }
  const size = Math.floor((chars * 3) / 4);
  if (size > maxBytes) throw tooLarge(param, maxBytes);
  budget?.take(size);
  return Buffer.from(text, 'base64');
}

function invalid(param: string, message: string): MediaInputError {
  return new MediaInputError(400, param, 'invalid_media_value', message);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

// ---------------------------------------------------------------------------------------------
// A map of them

/**
 * The `images` / `files` map of a request: `{param: value}` → `{param: file}`. Absent
 * (undefined or null) is an empty map. When `allowedParams` is given, every key must be in it
 * (checked before anything is decoded or fetched). The values are decoded concurrently (the
 * first failure cancels the fetches still running); each is capped at `opts.maxBytes`, all
 * together at four times that, and every byte counts against `opts.budget` too (413).
 */
export async function decodeFileMap(
  map: unknown,
  allowedParams: ReadonlySet<string> | undefined,
  field: 'images' | 'files',
  opts: FetchOptions,
): Promise<Record<string, MediaFile>> {
  if (map === undefined || map === null) return {};
  if (!isObject(map)) {
    throw new MediaInputError(
      400,
      field,
      'invalid_media_value',
      `'${field}' must be an object of input name → file (base64, a data: URI or an http(s) URL), not ${describe(map)}`,
    );
  }
  const entries = Object.entries(map);
  if (entries.length > MAX_FILE_ENTRIES) {
    throw new MediaInputError(
      400,
      field,
      'invalid_media_value',
      `'${field}' has ${entries.length} entries; at most ${MAX_FILE_ENTRIES} are accepted`,
    );
  }
  if (allowedParams) {
    for (const [key] of entries) {
      if (!allowedParams.has(key)) {
        const takes = allowedParams.size
          ? `its file inputs: ${[...allowedParams].sort().join(', ')}`
          : `it takes no ${field}`;
        throw new MediaInputError(
          400,
          `${field}.${clip(key)}`,
          'invalid_media_value',
          `'${clip(key)}' is not a file input of this model; ${takes}`,
        );
      }
    }
  }
  const totalCap = (opts.maxBytes ?? DEFAULT_MAX_BYTES) * 4;
  const budget = byteBudget(
    totalCap,
    () =>
      new MediaInputError(
        413,
        field,
        'files_too_large',
        `the ${field} of this request are larger than ${formatBytes(totalCap)} together`,
      ),
    opts.budget,
  );
  const controller = new AbortController();
  const outer = opts.signal;
  const onOuterAbort = () => controller.abort(outer!.reason);
  if (outer?.aborted) onOuterAbort();
  else outer?.addEventListener('abort', onOuterAbort, { once: true });
  const each = { ...opts, budget, signal: controller.signal };
  try {
    const files = await Promise.all(
      entries.map(async ([key, value]) => {
        try {
          return [key, await decodeMediaValue(value, `${field}.${key}`, each)] as const;
        } catch (err) {
          controller.abort(err);
          throw err;
        }
      }),
    );
    // fromEntries defines own properties: a `__proto__` key stays a key
    return Object.fromEntries(files);
  } finally {
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

function clip(text: string): string {
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}
