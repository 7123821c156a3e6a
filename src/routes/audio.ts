/**
 * The OpenAI audio endpoints: `POST /v1/audio/speech` (JSON in, audio out, streamed) and
 * `POST /v1/audio/transcriptions` / `/v1/audio/translations` (multipart in, JSON or text out).
 * Same auth, model gate, quotas, scheduler and call log as chat; the wire formats are
 * upstream/audio-surface.ts. Multipart parsing is registered here only: one file, in the `file`
 * part, at most AUDIO_FILE_LIMIT bytes (413 past it), held in memory to be sent on (and sent
 * again on failover).
 */
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config/types.ts';
import { badRequest, GatewayError } from '../errors.ts';
import type { ModelCatalogView } from '../routing/catalog.ts';
import { SpeechSurface, TranscriptionSurface, type FormPart } from '../surfaces/audio-surface.ts';
import { formError, type FormErrorText } from './form-errors.ts';
import { reserveUpload, uploadBudgetOf, uploadHoldOf, type UploadHold } from './media-upload-budget.ts';
import { useRawJsonBodies } from './json-body.ts';
import { gateOpenAIModel } from './model-gate.ts';
import { JSON_BODY_LIMIT } from './openai.ts';
import { queryOf, runProxiedCall, type ProxiedCallDeps } from './proxied-call.ts';

export interface AudioRoutesOptions extends ProxiedCallDeps {
  catalog: ModelCatalogView;
  /** The live config (`alias_defaults[alias].voice`). */
  config: () => GatewayConfig;
}

/** The largest audio file a transcription takes (OpenAI's own limit is 25 MB). */
export const AUDIO_FILE_LIMIT = 64 * 1024 * 1024;
/** The largest text field of a form (a long `prompt`). */
const FORM_FIELD_LIMIT = 1024 * 1024;
const FORM_FIELDS = 100;

export async function audioRoutes(app: FastifyInstance, opts: AudioRoutesOptions): Promise<void> {
  const { catalog } = opts;
  useRawJsonBodies(app, JSON_BODY_LIMIT);
  await app.register(multipart, {
    // two files, so that a second one is told apart (400) rather than hitting busboy's limit
    limits: {
      fileSize: AUDIO_FILE_LIMIT,
      files: 2,
      fields: FORM_FIELDS,
      fieldSize: FORM_FIELD_LIMIT,
      parts: FORM_FIELDS + 2,
    },
  });

  app.post('/v1/audio/speech', { bodyLimit: JSON_BODY_LIMIT }, (req: FastifyRequest, reply: FastifyReply) =>
    runProxiedCall(opts, 'speech', req, reply, (ctx, body, model) => {
      if (typeof body.input !== 'string') {
        throw badRequest(
          body.input === undefined ? 'You must provide an input parameter.' : '`input` must be a string.',
          'input',
          'invalid_input',
        );
      }
      const gated = gateOpenAIModel(catalog, model, ctx.caller.allow);
      const defaults = opts.config().alias_defaults;
      const alias = gated.resolution.alias ?? gated.resolution.requested;
      const defaultVoice = Object.hasOwn(defaults, alias) ? defaults[alias].voice : undefined;
      return {
        surface: new SpeechSurface({
          path: '/v1/audio/speech',
          query: queryOf(req.url),
          body,
          rawBody: req.rawBody,
          defaultVoice,
        }),
        resolution: gated.resolution,
        refreshCandidates: gated.refreshCandidates,
      };
    }),
  );

  // the audio is held in memory (it is sent again on failover): it counts against the gateway's upload budget
  const budget = reserveUpload(uploadBudgetOf(app, opts.config));
  for (const [endpoint, path] of [
    ['transcriptions', '/v1/audio/transcriptions'],
    ['translations', '/v1/audio/translations'],
  ] as const) {
    app.post(path, { preParsing: budget }, async (req: FastifyRequest, reply: FastifyReply) => {
      // an unknown caller's upload is not read: runProxiedCall refuses (and records) it
      if (isAuthenticated(opts, req)) await readAudioForm(req, uploadHoldOf(req));
      return runProxiedCall(opts, endpoint, req, reply, (ctx, _fields, model) => {
        const form = formOf(req);
        if (!form.parts.some((p) => p.file))
          throw badRequest('You must provide a file in the `file` part.', 'file', 'missing_file');
        const gated = gateOpenAIModel(catalog, model, ctx.caller.allow);
        return {
          surface: new TranscriptionSurface({
            endpoint,
            path,
            query: queryOf(req.url),
            parts: form.parts,
            fields: form.fields,
          }),
          resolution: gated.resolution,
          refreshCandidates: gated.refreshCandidates,
        };
      });
    });
  }
}

function isAuthenticated(opts: AudioRoutesOptions, req: FastifyRequest): boolean {
  try {
    opts.callers.identify(req);
    return true;
  } catch {
    return false;
  }
}

/** A parsed form: its parts in order, and its fields by name (first value; `name[]` as lists). */
interface AudioForm {
  parts: FormPart[];
  fields: Record<string, unknown>;
}

const forms = new WeakMap<FastifyRequest, AudioForm>();

function formOf(req: FastifyRequest): AudioForm {
  return forms.get(req) ?? { parts: [], fields: {} };
}

/**
 * Reads the whole form into memory; its fields become the request's body (runProxiedCall
 * reads `model` there). Refusals are OpenAI-shaped: 415 not multipart, 413 past a limit, 400
 * a malformed form, a file elsewhere than in `file`, or a second file.
 */
async function readAudioForm(req: FastifyRequest, hold: UploadHold | undefined): Promise<void> {
  if (!req.isMultipart()) {
    throw new GatewayError({
      status: 415,
      code: 'unsupported_media_type',
      message: 'Send the audio as multipart/form-data, the file in the `file` part.',
    });
  }
  const parts: FormPart[] = [];
  const fields: Record<string, unknown> = {};
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file')
          throw badRequest(
            `Send the audio in the \`file\` part, not in \`${part.fieldname}\`.`,
            'file',
            'invalid_file',
          );
        if (parts.some((p) => p.file))
          throw badRequest('Send one audio file only, in the `file` part.', 'file', 'invalid_file');
        const data = await meteredBuffer(part.file, hold);
        if (part.file.truncated) throw AUDIO_FORM_ERRORS.fileTooLarge(undefined);
        // a file part may come without a filename (busboy takes a typed part as a file): it goes on named `file`
        const filename = typeof part.filename === 'string' ? part.filename : 'file';
        parts.push({ name: 'file', file: { filename, contentType: part.mimetype, data } });
        continue;
      }
      if (part.valueTruncated || part.fieldnameTruncated) {
        throw new GatewayError({
          status: 413,
          code: 'request_too_large',
          param: part.fieldname,
          message: `The form field \`${part.fieldname}\` is larger than ${FORM_FIELD_LIMIT / 1024} KiB.`,
        });
      }
      const json = part.mimetype === 'application/json';
      const value = json || typeof part.value !== 'string' ? JSON.stringify(part.value) : part.value;
      parts.push(
        json ? { name: part.fieldname, value, contentType: 'application/json' } : { name: part.fieldname, value },
      );
      const name = part.fieldname;
      if (name.endsWith('[]')) fields[name] = [...((fields[name] as unknown[] | undefined) ?? []), part.value];
      else if (!Object.hasOwn(fields, name)) fields[name] = part.value;
    }
  } catch (err) {
    throw formError(err, AUDIO_FORM_ERRORS);
  }
  forms.set(req, { parts, fields });
  req.body = fields;
}

/** A file part's bytes, each chunk counted against the gateway's upload budget first (503 past it). */
async function meteredBuffer(file: AsyncIterable<Buffer>, hold: UploadHold | undefined): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of file) {
    hold?.take(chunk.length);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const AUDIO_FORM_ERRORS: FormErrorText = {
  fileTooLarge: () =>
    new GatewayError({
      status: 413,
      code: 'file_too_large',
      param: 'file',
      message: `The audio file is larger than ${AUDIO_FILE_LIMIT / (1024 * 1024)} MiB.`,
    }),
  tooManyFiles: () => badRequest('Send one audio file only, in the `file` part.', 'file', 'invalid_file'),
  fields: FORM_FIELDS,
};
