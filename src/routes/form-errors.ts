/**
 * What a multipart form read with @fastify/multipart failed at, as the gateway answers it
 * (shared by the audio and the image-edit forms): a GatewayError stays as it is; busboy's
 * limits become 413s (a file too large, too many fields) or the form's own "too many files"
 * 400; a client that hung up mid-form stays that (nothing can be answered); anything else is
 * a 400 for a malformed form.
 */
import { badRequest, GatewayError } from '../errors.ts';

export interface FormErrorText {
  /** The answer for a file past the size limit (`param`: the part it came in, when known). */
  fileTooLarge: (param: string | undefined) => GatewayError;
  /** The answer for more files than the form takes. */
  tooManyFiles: () => GatewayError;
  /** How many fields the form takes. */
  fields: number;
}

export function formError(err: unknown, text: FormErrorText, param?: string): unknown {
  if (err instanceof GatewayError) return err;
  switch ((err as { code?: unknown }).code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return text.fileTooLarge(param);
    case 'FST_FILES_LIMIT':
      return text.tooManyFiles();
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new GatewayError({
        status: 413,
        code: 'request_too_large',
        message: `The form has more than ${text.fields} fields.`,
      });
    case 'FST_PROTO_VIOLATION':
      return badRequest('A form field has a reserved name.', null, 'invalid_form');
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return badRequest('A form field declared as JSON is not valid JSON.', null, 'invalid_form');
    case 'FST_MP_PREMATURE_CLOSE':
      return err;
    default:
      return badRequest(
        `The multipart form could not be read: ${(err as Error).message ?? 'malformed'}.`,
        null,
        'invalid_form',
      );
  }
}
