/**
 * Hot reload of config.yaml. Watches the file's parent directory (filtered to the file's
 * name), not the file's inode, so editors that save by writing a temp file and renaming it
 * over the original (vim, many IDEs, `kubectl`-style atomic writes) keep being seen after the
 * first save. A burst of writes is debounced into one reload of the final content.
 *
 * A deleted file is ignored: the running configuration stays in force, nothing is reported,
 * and the file is reloaded when it reappears (a rename-and-replace save briefly looks exactly
 * like that, so reporting deletions would only produce noise).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { watch } from 'chokidar';
import { parseConfigText, type ConfigResult } from './load.ts';
import { createConfigValidator } from './schema.ts';

export interface WatchConfigOptions {
  /** Quiet time after the last change before reloading (default 200 ms). */
  debounceMs?: number;
  /** Environment for `${VAR}` interpolation (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Watcher failures (e.g. out of inotify watches); default: a process warning. */
  onError?: (err: Error) => void;
}

export interface ConfigWatcher {
  /** Resolves once the watch is in place (changes before that may be missed). */
  ready: Promise<void>;
  /** Stops watching; a pending reload is dropped. */
  close(): Promise<void>;
}

/**
 * Calls `onReload` with the parsed result each time the file at `path` settles after a change
 * (invalid content arrives as `{ok: false, problems}`; keeping the old config is the caller's job).
 */
export function watchConfigFile(
  path: string,
  onReload: (result: ConfigResult) => void,
  opts: WatchConfigOptions = {},
): ConfigWatcher {
  const file = resolve(path);
  const dir = dirname(file);
  const debounceMs = opts.debounceMs ?? 200;
  const env = opts.env ?? process.env;
  const onError = opts.onError ?? ((err: Error) => process.emitWarning(err));
  const validator = createConfigValidator();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const reload = () => {
    timer = undefined;
    if (closed) return;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // deleted: wait for it to reappear
      onReload({ ok: false, problems: [{ path: '', message: `cannot read ${file}: ${(err as Error).message}` }] });
      return;
    }
    onReload(parseConfigText(text, env, validator, dir));
  };
  const scheduleReload = () => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(reload, debounceMs);
  };

  const watcher = watch(dir, {
    depth: 0,
    ignoreInitial: true,
    ignored: (p: string) => {
      const abs = resolve(p);
      return abs !== dir && abs !== file;
    },
  });
  watcher.on('add', scheduleReload);
  watcher.on('change', scheduleReload);
  watcher.on('unlink', scheduleReload);
  watcher.on('error', (err) => onError(err instanceof Error ? err : new Error(String(err))));
  const ready = new Promise<void>((res) => watcher.once('ready', () => res()));

  return {
    ready,
    async close() {
      closed = true;
      clearTimeout(timer);
      await watcher.close();
    },
  };
}
