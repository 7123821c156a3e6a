/**
 * Uploaded files spooled to disk while they arrive, instead of held in memory: one private
 * temporary folder per request (under `<jobs_dir>/uploads`, mode 0700), one file per part, each chunk
 * handed to a meter first (the request's byte budgets: a throw stops the upload there). Once
 * the whole form has passed its limits the files are read back (`read`); `dispose()` removes
 * the folder whatever happened, and is safe to call twice.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Leading bytes kept of every spooled file, enough for sniffMime. */
const HEAD_BYTES = 64;

/** Where the spools of a gateway whose jobs live in `jobsDir` go (emptied at start-up: nothing is uploading then). */
export function spoolDir(jobsDir: string): string {
  return join(jobsDir, 'uploads');
}

export interface SpooledFile {
  path: string;
  bytes: number;
  /** The first bytes, for sniffing the type without reading the file back. */
  head: Buffer;
}

export class UploadSpool {
  private count = 0;
  private disposed = false;

  private constructor(readonly dir: string) {}

  /** A new spool folder under `parent` (created when missing). */
  static async open(parent: string): Promise<UploadSpool> {
    await mkdir(parent, { recursive: true, mode: 0o700 });
    return new UploadSpool(await mkdtemp(join(parent, 'upload-')));
  }

  /** Writes `stream` to a new file; `meter(bytes)` sees every chunk first and may throw to stop it. */
  async save(stream: Readable, meter: (bytes: number) => void): Promise<SpooledFile> {
    if (this.disposed) throw new Error('the upload spool is disposed');
    const path = join(this.dir, String(this.count++));
    let bytes = 0;
    const heads: Buffer[] = [];
    let headBytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, next) {
        try {
          meter(chunk.length);
        } catch (err) {
          return next(err as Error);
        }
        bytes += chunk.length;
        if (headBytes < HEAD_BYTES) {
          heads.push(chunk.subarray(0, HEAD_BYTES - headBytes));
          headBytes += Math.min(chunk.length, HEAD_BYTES - headBytes);
        }
        next(null, chunk);
      },
    });
    await pipeline(stream, counter, createWriteStream(path, { mode: 0o600 }));
    return { path, bytes, head: Buffer.concat(heads) };
  }

  read(file: SpooledFile): Promise<Buffer> {
    return readFile(file.path);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await rm(this.dir, { recursive: true, force: true });
  }
}
