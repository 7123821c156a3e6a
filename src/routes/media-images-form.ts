/**
 * The multipart form of `POST /v1/images/edits` (routes/media-images.ts): its files spooled to
 * disk as they arrive, within the request's and the gateway's byte budgets, its text fields
 * read the way the JSON body would be (numbers exact).
 */
import type { FastifyRequest } from 'fastify';
import { badRequest, GatewayError } from '../errors.ts';
import { parseExactJson } from '../wire/exact-json.ts';
import { requireKind } from '../media/inputs/files.ts';
import { sniffMime } from '../media/inputs/sniff.ts';
import { UploadSpool, type SpooledFile } from '../media/inputs/upload-spool.ts';
import type { MediaFile } from '../media/service-types.ts';
import { formError, type FormErrorText } from './form-errors.ts';
import { MEDIA_FILE_LIMIT, requestFileBudget } from './media-caller.ts';
import type { UploadHold } from './media-upload-budget.ts';

/** The most images an edit (or `ref_images`) may carry; a mask comes on top. */
export const MAX_IMAGES = 16;
export const FORM_FIELD_LIMIT = 1024 * 1024;
export const FORM_FIELDS = 100;

export interface ImageForm {
  images: MediaFile[];
  mask?: MediaFile;
  fields: Record<string, unknown>;
}

/**
 * Reads an edit's form: `image` / `image[]` files (in order), one `mask`, text fields (numeric
 * text becomes a number, big integers exact). 415 not multipart, 413 past a limit (one file,
 * or all of them together), 400 a file in another part or a malformed form. A file's type is
 * what its bytes show; the part's declared type only when they show nothing. Files go to a
 * temporary folder as they arrive (never a whole upload in memory), each chunk counted against
 * the request's budget and `hold` (the gateway's, 503 past it); they are read back only once the
 * whole form passed, and the folder is removed whatever happened.
 */
export async function readImageForm(
  req: FastifyRequest,
  spoolAt: string,
  hold: UploadHold | undefined,
): Promise<ImageForm> {
  if (!req.isMultipart()) {
    throw new GatewayError({
      status: 415,
      code: 'unsupported_media_type',
      message: 'Send the edit as multipart/form-data, the image in the `image` part.',
    });
  }
  const form: ImageForm = { images: [], fields: {} };
  const budget = requestFileBudget('image');
  const spool = await UploadSpool.open(spoolAt);
  try {
    const spooled: { name: string; file: SpooledFile; declared: string | undefined }[] = [];
    try {
      for await (const part of req.parts()) {
        const name = part.fieldname;
        if (part.type === 'file') {
          if (name !== 'image' && name !== 'image[]' && name !== 'mask') {
            throw badRequest(
              `Unknown file part \`${name}\`: send images in \`image\` (or \`image[]\`) and the mask in \`mask\`.`,
              name,
              'unknown_file',
            );
          }
          if (name === 'mask' && spooled.some((s) => s.name === 'mask')) {
            throw badRequest('Send one mask only.', 'mask', 'invalid_file');
          }
          if (name !== 'mask' && spooled.filter((s) => s.name !== 'mask').length >= MAX_IMAGES) {
            throw badRequest(`Send at most ${MAX_IMAGES} images.`, 'image', 'invalid_file');
          }
          // to disk as it arrives, every chunk counted against the request's and the gateway's budgets
          const file = await spool
            .save(part.file, (bytes) => {
              budget.take(bytes);
              hold?.take(bytes);
            })
            .catch((err: unknown) => {
              throw formError(err, IMAGE_FORM_ERRORS, name);
            });
          if (part.file.truncated) throw IMAGE_FORM_ERRORS.fileTooLarge(name === 'mask' ? 'mask' : 'image');
          if (file.bytes === 0) {
            throw badRequest(`The file in \`${name}\` is empty.`, name === 'mask' ? 'mask' : 'image', 'invalid_file');
          }
          spooled.push({ name, file, declared: part.mimetype });
          continue;
        }
        if (part.valueTruncated || part.fieldnameTruncated) {
          throw new GatewayError({
            status: 413,
            code: 'request_too_large',
            param: name,
            message: `The form field \`${name}\` is larger than ${FORM_FIELD_LIMIT / 1024} KiB.`,
          });
        }
        const key = name.endsWith('[]') ? name.slice(0, -2) : name;
        const value = TEXT_FIELDS.has(key) ? part.value : fieldValue(part.value);
        if (name.endsWith('[]')) form.fields[key] = [...((form.fields[key] as unknown[] | undefined) ?? []), value];
        else if (!Object.hasOwn(form.fields, key)) form.fields[key] = value;
      }
    } catch (err) {
      throw formError(err, IMAGE_FORM_ERRORS);
    }
    // once the whole form is read: a size refusal (413) comes before a type one, and nothing is read back before both
    for (const { name, file, declared } of spooled) {
      const param = name === 'mask' ? 'mask' : 'image';
      requireKind({ bytes: file.head, mime: declaredType(declared) }, 'image', param);
    }
    for (const { name, file, declared } of spooled) {
      const bytes = await spool.read(file);
      const image = { bytes, mime: sniffMime(bytes) ?? declaredType(declared) };
      if (name === 'mask') form.mask = image;
      else form.images.push(image);
    }
  } finally {
    await spool.dispose();
  }
  return form;
}

/** A part's declared type when it is a type/subtype, else octet-stream. */
function declaredType(mimetype: string | undefined): string {
  const value = mimetype?.split(';')[0].trim().toLowerCase();
  return value && /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(value) ? value : 'application/octet-stream';
}

/** Form fields that are text whatever they look like. */
const TEXT_FIELDS = new Set(['model', 'prompt', 'size', 'response_format', 'output_format', 'negative_prompt']);
const NUMERIC = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** A form field's text: numeric text becomes a number (a bigint beyond 2^53, exact), the rest stays text. */
function fieldValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  return NUMERIC.test(value) ? parseExactJson(value) : value;
}

const IMAGE_FORM_ERRORS: FormErrorText = {
  fileTooLarge: (param) =>
    new GatewayError({
      status: 413,
      code: 'file_too_large',
      param: param ?? 'image',
      message: `${param ?? 'A file'} is larger than the ${MEDIA_FILE_LIMIT / (1024 * 1024)} MiB a file may be.`,
    }),
  tooManyFiles: () => badRequest(`Send at most ${MAX_IMAGES} images and one mask.`, 'image', 'invalid_file'),
  fields: FORM_FIELDS,
};
