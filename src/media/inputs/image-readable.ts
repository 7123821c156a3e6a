/**
 * A file for an image slot whose signature says PNG, JPEG, WebP, GIF or TIFF must also have a
 * header that parses (sharp's metadata: the header only, nothing is decoded): a PNG signature
 * with a page after it, or a JPEG marker and nothing else, is refused here with a 400
 * `invalid_file` naming the param, before any job exists — not sent to a box whose image
 * loader would fail it as a 502 naming its own file path. Formats sharp may not read here
 * (BMP, AVIF/HEIC) are left to the box; without sharp nothing is checked.
 */
import { MediaInputError } from './errors.ts';
import { sniffMime } from './sniff.ts';
import { loadSharp } from '../sharp-lazy.ts';
import type { MediaFile } from '../service-types.ts';

const READ_HERE: Record<string, string> = {
  'image/png': 'PNG',
  'image/jpeg': 'JPEG',
  'image/webp': 'WebP',
  'image/gif': 'GIF',
  'image/tiff': 'TIFF',
};

/** Throws the 400 of the first of `params` (image slots of `files`) whose header does not parse. */
export async function requireReadableImages(files: Record<string, MediaFile>, params: Iterable<string>): Promise<void> {
  for (const param of params) {
    const file = Object.hasOwn(files, param) ? files[param] : undefined;
    const mime = file && sniffMime(file.bytes);
    const format = mime && Object.hasOwn(READ_HERE, mime) ? READ_HERE[mime] : undefined;
    if (!file || !format) continue;
    let sharp: Awaited<ReturnType<typeof loadSharp>>;
    try {
      sharp = await loadSharp();
    } catch {
      return; // no sharp on this platform: the box's loader is the judge
    }
    try {
      await sharp(file.bytes).metadata();
    } catch {
      throw new MediaInputError(
        400,
        param,
        'invalid_file',
        `${param} is not a readable image: it starts like a ${format} file, but its header is damaged.`,
      );
    }
  }
}
