/**
 * The files of media jobs, under the jobs dir: `<jobsDir>/<job id>/<n>.<ext>` for results,
 * `in-<n>.<ext>` for uploaded inputs, and `<n>.w256.webp`-style thumbnails cached beside their
 * original. Names are made here and checked here: a job id and a file name must match strict
 * patterns (no separators, no `..`), and a path that resolves outside its job's folder (a
 * symlink) is refused. Writes are atomic (a temporary name, then a rename).
 */
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { loadSharp } from '../sharp-lazy.ts';
import { JOB_ID_RE, type ResultKind } from './job-types.ts';
import type { JobStore } from './store.ts';

/** Extension by MIME type (parameters and case ignored); anything else is `bin`. */
const EXT_BY_MIME: Record<string, string> = {
  'image/png': 'png',
  'image/apng': 'png',
  'image/jpeg': 'jpg',
  'image/jpg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/avif': 'avif',
  'image/bmp': 'bmp',
  'image/tiff': 'tiff',
  'image/svg+xml': 'svg',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'video/quicktime': 'mov',
  'video/x-matroska': 'mkv',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/ogg': 'ogg',
  'audio/opus': 'opus',
  'audio/aac': 'aac',
  'audio/mp4': 'm4a',
  'audio/webm': 'weba',
  'model/gltf-binary': 'glb',
  'model/gltf+json': 'gltf',
  'model/obj': 'obj',
  'model/stl': 'stl',
  'model/fbx': 'fbx',
  'application/x-fbx': 'fbx',
  'model/vnd.usdz+zip': 'usdz',
  'model/ply': 'ply',
  'application/json': 'json',
  'text/plain': 'txt',
  'application/octet-stream': 'bin',
};

/** MIME type by extension, for serving: the first MIME of `EXT_BY_MIME` with that extension. */
const MIME_BY_EXT: Record<string, string> = {};
for (const [mime, ext] of Object.entries(EXT_BY_MIME)) MIME_BY_EXT[ext] ??= mime;

/** Image formats sharp reads (so: dimensions and thumbnails). */
const RASTER_EXTS = new Set(['png', 'jpg', 'webp', 'gif', 'avif', 'tiff']);

const MESH_EXTS = new Set(['glb', 'gltf', 'obj', 'stl', 'fbx', 'usdz', 'ply']);

export function extOf(mime: string): string {
  return EXT_BY_MIME[mime.split(';')[0].trim().toLowerCase()] ?? 'bin';
}

export function mimeOfExt(ext: string): string {
  return MIME_BY_EXT[ext] ?? 'application/octet-stream';
}

/** Which kind of result a MIME type is. */
export function kindOf(mime: string): ResultKind {
  const ext = extOf(mime);
  if (MESH_EXTS.has(ext)) return 'mesh';
  const top = mime.split('/')[0].trim().toLowerCase();
  return top === 'image' || top === 'video' || top === 'audio' ? top : 'other';
}

/** A result, an input, or a thumbnail of a result: `<n>.<ext>`, `in-<n>.<ext>`, `<n>.w<W>h<H>.<ext>`. */
const FILE_RE = /^(?:in-)?\d{1,4}(?:\.(?:w\d{1,4}(?:h\d{1,4})?|h\d{1,4}))?\.[a-z0-9]{2,5}$/;

/** The most results or inputs one job may have (`n` is 0..MAX_N). */
export const MAX_N = 9_999;

export const THUMB_MAX = 2048;
export const THUMB_DEFAULT_W = 256;

export type ThumbFormat = 'webp' | 'png' | 'jpeg';

export interface ThumbOptions {
  format: ThumbFormat;
  /** Box the thumbnail fits in (never enlarged); 1..2048 each; neither given: w = 256. */
  w?: number;
  h?: number;
}

export interface WrittenFile {
  /** Name inside the job's folder. */
  file: string;
  bytes: number;
  sha256: string;
  width?: number;
  height?: number;
}

export interface LocatedFile {
  path: string;
  size: number;
  mime: string;
}

export interface Thumbnail {
  file: string;
  mime: string;
  data: Buffer;
}

/** A refused name or request; `code` is for the route to map (400 for invalid_*, 404 for not_found). */
export class ArtifactError extends Error {
  /** `param`: the option at fault, when one is (`w` / `h` for invalid_size). */
  constructor(
    readonly code: 'invalid_job_id' | 'invalid_file' | 'invalid_size' | 'unsafe_path' | 'not_found' | 'not_an_image',
    message: string,
    readonly param?: string,
  ) {
    super(message);
    this.name = 'ArtifactError';
  }
}

export class Artifacts {
  readonly #root: string;
  #realRoot: string | undefined;
  readonly #thumbsInFlight = new Map<string, Promise<Thumbnail>>();

  /** `jobsDir`: the folder jobs.db lives in; each job's files go in a folder named by its id. */
  constructor(jobsDir: string) {
    this.#root = jobsDir;
  }

  /** Writes result `n` of a job: `<n>.<ext>`, with its digest and, for an image, its size. */
  async write(jobId: string, n: number, bytes: Uint8Array, mime: string): Promise<WrittenFile> {
    return this.#write(jobId, `${checkN(n)}.${extOf(mime)}`, bytes);
  }

  /** Writes uploaded input `n` of a job: `in-<n>.<ext>`. */
  async writeInput(jobId: string, n: number, bytes: Uint8Array, mime: string): Promise<WrittenFile> {
    return this.#write(jobId, `in-${checkN(n)}.${extOf(mime)}`, bytes);
  }

  /** Absolute path input `n` of a job is written at (to hand it on, e.g. to a ComfyUI upload). */
  inputPath(jobId: string, n: number, mime: string): string {
    return join(this.#root, checkJobId(jobId), `in-${checkN(n)}.${extOf(mime)}`);
  }

  /** A job's file, checked: its path, size and MIME type (for streaming); undefined when missing. */
  async locate(jobId: string, file: string): Promise<LocatedFile | undefined> {
    const path = await this.#safePath(jobId, file);
    if (path === undefined) return undefined;
    const s = await stat(path);
    return { path, size: s.size, mime: mimeOfExt(file.slice(file.lastIndexOf('.') + 1)) };
  }

  /** A job's file, checked, whole; undefined when missing. */
  async read(jobId: string, file: string): Promise<Buffer | undefined> {
    const path = await this.#safePath(jobId, file);
    return path === undefined ? undefined : readFile(path);
  }

  /**
   * A thumbnail of image result `n`, made with sharp the first time and kept beside it
   * (`<n>.w256.webp`), then served from that file.
   */
  async thumbnail(jobId: string, n: number, opts: ThumbOptions): Promise<Thumbnail> {
    checkJobId(jobId);
    checkN(n);
    const w = checkSize(opts.w, 'w');
    const h = checkSize(opts.h, 'h');
    const width = w ?? (h === undefined ? THUMB_DEFAULT_W : undefined);
    const ext = opts.format === 'jpeg' ? 'jpg' : opts.format;
    if (ext !== 'webp' && ext !== 'png' && ext !== 'jpg')
      throw new ArtifactError('invalid_file', `unknown thumbnail format ${String(opts.format)}`);
    const file = `${n}.${width === undefined ? '' : `w${width}`}${h === undefined ? '' : `h${h}`}.${ext}`;
    const mime = mimeOfExt(ext);
    const cached = await this.read(jobId, file);
    if (cached) return { file, mime, data: cached };
    const key = `${jobId}/${file}`;
    let pending = this.#thumbsInFlight.get(key);
    if (!pending) {
      pending = this.#makeThumbnail(jobId, n, file, mime, ext, width, h).finally(() =>
        this.#thumbsInFlight.delete(key),
      );
      this.#thumbsInFlight.set(key, pending);
    }
    return pending;
  }

  /** Removes a job's folder and everything in it (a symlinked folder: the link only). */
  async remove(jobId: string): Promise<void> {
    await rm(join(this.#root, checkJobId(jobId)), { recursive: true, force: true });
  }

  /**
   * Removes expired jobs, files first and then rows (a failure leaves the row for the next prune).
   * Returns how many.
   */
  async prune(store: JobStore, now: number): Promise<number> {
    let removed = 0;
    for (const id of store.expired(now)) {
      if (JOB_ID_RE.test(id)) await this.remove(id);
      if (store.delete(id)) removed++;
    }
    return removed;
  }

  async #write(jobId: string, file: string, bytes: Uint8Array): Promise<WrittenFile> {
    const dir = await this.#jobDir(jobId, true);
    const tmp = join(dir, `.${file}.${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(tmp, bytes, { flag: 'wx' });
    try {
      await rename(tmp, join(dir, file));
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    const out: WrittenFile = {
      file,
      bytes: bytes.byteLength,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    };
    if (RASTER_EXTS.has(file.slice(file.lastIndexOf('.') + 1))) {
      try {
        const m = await (await loadSharp())(bytes).metadata();
        const swap = (m.orientation ?? 1) >= 5; // EXIF-rotated: as displayed
        const width = swap ? m.height : m.width;
        const height = swap ? m.width : m.height;
        if (width && height) Object.assign(out, { width, height });
      } catch {
        // not decodable: stored as given, without dimensions
      }
    }
    return out;
  }

  async #makeThumbnail(
    jobId: string,
    n: number,
    file: string,
    mime: string,
    ext: string,
    w?: number,
    h?: number,
  ): Promise<Thumbnail> {
    const dir = await this.#jobDir(jobId, false);
    const names = await readdir(dir).catch(() => [] as string[]);
    const original = names.find((f) => f.startsWith(`${n}.`) && /^\d+\.[a-z0-9]{2,5}$/.test(f));
    if (original === undefined) throw new ArtifactError('not_found', `job ${jobId} has no result ${n}`);
    if (!RASTER_EXTS.has(original.slice(original.lastIndexOf('.') + 1)))
      throw new ArtifactError('not_an_image', `result ${n} is not an image`);
    const source = await this.read(jobId, original);
    if (!source) throw new ArtifactError('not_found', `job ${jobId} has no result ${n}`);
    let img = (await loadSharp())(source)
      .rotate()
      .resize({ width: w, height: h, fit: 'inside', withoutEnlargement: true });
    if (ext === 'jpg') img = img.flatten({ background: '#ffffff' }).jpeg({ quality: 85 });
    else if (ext === 'png') img = img.png();
    else img = img.webp({ quality: 80 });
    const data = await img.toBuffer();
    const tmp = join(dir, `.${file}.${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(tmp, data, { flag: 'wx' });
    await rename(tmp, join(dir, file));
    return { file, mime, data };
  }

  /** The job's folder, checked to be a real folder right under the jobs dir (made when `create`). */
  async #jobDir(jobId: string, create: boolean): Promise<string> {
    const dir = join(this.#root, checkJobId(jobId));
    if (create) await mkdir(dir, { recursive: true, mode: 0o700 });
    const s = await lstat(dir).catch(() => undefined);
    if (s === undefined) throw new ArtifactError('not_found', `job ${jobId} has no files`);
    if (!s.isDirectory()) throw new ArtifactError('unsafe_path', `job folder ${jobId} is not a plain folder`);
    return dir;
  }

  /** The path of a job's file after the name checks and a realpath check; undefined when it does not exist. */
  async #safePath(jobId: string, file: string): Promise<string | undefined> {
    checkJobId(jobId);
    if (typeof file !== 'string' || !FILE_RE.test(file))
      throw new ArtifactError('invalid_file', `invalid file name ${JSON.stringify(file)}`);
    const path = join(this.#root, jobId, file);
    let real: string;
    try {
      real = await realpath(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    this.#realRoot ??= await realpath(this.#root);
    if (real !== join(this.#realRoot, jobId, file) && !real.startsWith(join(this.#realRoot, jobId) + sep)) {
      throw new ArtifactError('unsafe_path', `${jobId}/${file} leads outside its job's folder`);
    }
    const s = await stat(real);
    if (!s.isFile()) throw new ArtifactError('unsafe_path', `${jobId}/${file} is not a file`);
    return real;
  }
}

function checkJobId(jobId: string): string {
  if (typeof jobId !== 'string' || !JOB_ID_RE.test(jobId))
    throw new ArtifactError('invalid_job_id', `invalid job id ${JSON.stringify(jobId)}`);
  return jobId;
}

function checkN(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > MAX_N) throw new ArtifactError('invalid_file', `invalid file number ${n}`);
  return n;
}

function checkSize(v: number | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < 1 || v > THUMB_MAX)
    throw new ArtifactError('invalid_size', `${name} must be a whole number of pixels from 1 to ${THUMB_MAX}`, name);
  return v;
}
