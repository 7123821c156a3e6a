/**
 * Text a ComfyUI box wrote (an exception message, a validation error) as the gateway passes it
 * on to a job's owner: absolute file paths of the box (`/home/comfy/ComfyUI/input/x.png`,
 * `C:\ComfyUI\models\y.safetensors`) are cut to their file name — the name says what went
 * wrong, the folders only describe the operator's machine. Pure.
 */

/** A POSIX absolute path of two or more segments (a lone `/x` is as likely a ratio or a URL path). */
const POSIX_PATH = /(?<![\w.:/~-])\/(?:[\w.@+~-]+\/)+([\w.@+~-]*)/g;
/** A Windows drive path. */
const WINDOWS_PATH = /(?<![\w])[A-Za-z]:\\(?:[^\\\s'"<>|:*?]+\\)+([^\\\s'"<>|:*?]*)/g;

export function withoutBoxPaths(text: string): string {
  const nameOnly = (_path: string, name: string) => name || '…';
  return text.replace(WINDOWS_PATH, nameOnly).replace(POSIX_PATH, nameOnly);
}
