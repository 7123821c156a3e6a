/**
 * The one error the media input readers (files.ts, fetch.ts) throw: a value the
 * client sent that cannot become a file. It is a GatewayError, so a route may simply let it
 * propagate and the error handler renders it (OpenAI shape, `param` set, no stack, no URL
 * credentials: messages are built from redacted URLs only).
 */
import { GatewayError } from '../../errors.ts';

export type MediaInputCode =
  /** Not a string, empty, or not base64 / data URI / URL. */
  | 'invalid_media_value'
  /** A URL whose scheme is not http(s), on the first hop or on a redirect. */
  | 'unsupported_url'
  /** The URL (or a redirect, or what its host name resolves to) is a private/loopback/... address. */
  | 'private_address'
  | 'too_many_redirects'
  /** The server answered non-2xx, a redirect without Location, a connection failure. */
  | 'fetch_failed'
  | 'fetch_timeout'
  /** One file over the size cap. */
  | 'file_too_large'
  /** All files of a request together over their cap. */
  | 'files_too_large'
  /** A file whose bytes are not the media its input loads (text in an image slot). */
  | 'invalid_file';

export class MediaInputError extends GatewayError {
  declare readonly status: 400 | 413;
  declare readonly param: string;
  declare readonly code: MediaInputCode;

  constructor(status: 400 | 413, param: string, code: MediaInputCode, message: string) {
    super({ status, param, code, message });
    this.name = 'MediaInputError';
  }
}

/** `bytes` as a short size for messages: `64 MiB`, `1.5 MiB`, `12 KiB`, `800 bytes`. */
export function formatBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  if (mib >= 1) return `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB`;
  const kib = bytes / 1024;
  if (kib >= 1) return `${Number.isInteger(kib) ? kib : kib.toFixed(1)} KiB`;
  return `${bytes} bytes`;
}

export const tooLarge = (param: string, maxBytes: number): MediaInputError =>
  new MediaInputError(
    413,
    param,
    'file_too_large',
    `${param} is larger than the ${formatBytes(maxBytes)} a file may be.`,
  );
