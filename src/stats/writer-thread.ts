/**
 * The main thread's handle on the call log's writer thread (call-log-writer.ts).
 *
 * The project runs TypeScript through tsx, and a worker inherits `process.execArgv`
 * (`--import tsx`), but Node 20 does not apply those loader hooks to a worker's modules. So
 * the thread starts from a small JavaScript bootstrap that imports the writer module and,
 * if the runtime cannot load a `.ts` file by itself, registers tsx in the thread and imports
 * it again (under another URL: Node caches the failed import). Runtimes that load `.ts` in
 * workers natively take the first path.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { WriterSignals, type WriterData, type WriterMessage, type WriterOp } from './writer-protocol.ts';

const BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
const { entry, tsx } = workerData.boot;
import(entry).catch(async (err) => {
  if (!tsx || !err || err.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import(tsx);
  register();
  return import(entry + '?tsx');
});
`;

/** The writer module beside this one, with this module's own extension (`.ts` in the source tree, `.mjs` in dist/). */
export const WRITER_MODULE = new URL(`./call-log-writer${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export interface WriterThreadOptions {
  /** stats.db, created and migrated. */
  file: string;
  /** The writer module; tests pass a broken one. */
  module?: URL;
  /** `ready` once, then every op's outcome, in the order the writer settles them. */
  onMessage: (message: WriterMessage) => void;
  /** The thread failed to start or died (called at most once, never after `terminate()`). */
  onGone: (err: Error) => void;
}

export class WriterThread {
  readonly signals = new WriterSignals();
  /** `performance.now()` when the thread was created. */
  readonly startedAt = performance.now();
  /** For tests that simulate a crash. */
  readonly worker: Worker;
  private gone = false;

  /** Starts the thread; it is usable once `ready`. Throws if the thread cannot be created. */
  constructor(opts: WriterThreadOptions) {
    const data: WriterData & { boot: { entry: string; tsx: string | null } } = {
      file: opts.file,
      signals: this.signals.buffer,
      boot: { entry: (opts.module ?? WRITER_MODULE).href, tsx: tsxApi() },
    };
    this.worker = new Worker(BOOTSTRAP, { eval: true, workerData: data });
    this.worker.unref();
    const goneWith = (err: Error) => {
      if (this.gone) return;
      this.gone = true;
      opts.onGone(err);
    };
    this.worker.on('message', (message: WriterMessage) => opts.onMessage(message));
    this.worker.on('error', (err) => goneWith(err));
    this.worker.on('messageerror', (err) => goneWith(err));
    this.worker.on('exit', (code) => goneWith(new Error(`call log writer thread exited with code ${code}`)));
  }

  /** The thread has opened the database and takes ops. */
  get ready(): boolean {
    return !this.gone && this.signals.ready;
  }

  post(op: WriterOp, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(op, transfer);
  }

  /** Stops the thread without waiting (and without reporting its exit). */
  terminate(): void {
    this.gone = true;
    this.worker.terminate().catch(() => {});
  }
}

/** tsx's registration API, when tsx is installed (it is how the project runs TypeScript). */
function tsxApi(): string | null {
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    return null;
  }
}
