/**
 * The content of Responses input items as chat-completions content: a message's parts
 * (`input_text`, `output_text`, `refusal`, `input_image`) and a tool's output.
 *
 * A chat backend reads text and images only. Images go as `image_url` parts, a URL or a data
 * URI as the client gave it, with the client's `detail`. What only OpenAI can resolve or read is
 * a 400 naming the part: an image or file given by `file_id` (the Files API is OpenAI's, the
 * gateway holds no files) and `input_file` (PDFs and other documents need OpenAI's own reader).
 */
import { invalid, isObject, unsupported, type Json } from './types.ts';

export type ChatPart =
  { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: string } };

/** Text-like parts: what the model wrote or read as text, whichever role carries it. */
const TEXT_PARTS = new Set(['input_text', 'output_text', 'text', 'summary_text', 'reasoning_text']);

/** The API's image detail levels; chat completions knows the first three. */
const DETAILS = new Set(['low', 'high', 'auto', 'original']);

/** `content` as a list of part objects: a string is one text part; each entry must be an object with a `type`. */
export function partsOf(content: unknown, path: string): Json[] {
  if (typeof content === 'string') return [{ type: 'input_text', text: content }];
  if (!Array.isArray(content)) throw invalid(path, 'must be a string or an array of content parts', 'invalid_type');
  content.forEach((part, j) => {
    if (!isObject(part)) throw invalid(`${path}[${j}]`, 'must be a content part object', 'invalid_type');
    if (typeof part.type !== 'string')
      throw invalid(`${path}[${j}].type`, 'Field required', 'missing_required_parameter');
  });
  return content as Json[];
}

/** A part's text when it is a text-like part (a refusal counts: it is what the assistant said), else undefined. */
function textOf(part: Json, path: string): string | undefined {
  if (part.type === 'refusal') {
    if (typeof part.refusal !== 'string') throw invalid(`${path}.refusal`, 'must be a string', 'invalid_type');
    return part.refusal;
  }
  if (!TEXT_PARTS.has(part.type as string)) return undefined;
  if (typeof part.text !== 'string') throw invalid(`${path}.text`, 'must be a string', 'invalid_type');
  return part.text;
}

/** A user message's content: a plain string when it is one text, else text and image parts. */
export function userContent(content: unknown, path: string): string | ChatPart[] {
  const parts = partsOf(content, path).map((part, j): ChatPart => {
    const at = `${path}[${j}]`;
    const text = textOf(part, at);
    if (text !== undefined) return { type: 'text', text };
    if (part.type === 'input_image') return imagePart(part, at);
    throw unsupportedPart(part, at, 'a user message');
  });
  if (parts.length === 1 && parts[0].type === 'text') return parts[0].text;
  return parts;
}

/**
 * The content of a role that only carries text (assistant, system, developer), joined into one
 * string, the form every chat template accepts for those roles. An assistant's parts are pieces
 * of one answer and join as they are; separate system parts are separate instructions, one per line.
 */
export function textContent(content: unknown, path: string, role: string): string {
  const separator = role === 'assistant' ? '' : '\n';
  return partsOf(content, path)
    .map((part, j) => {
      const at = `${path}[${j}]`;
      const text = textOf(part, at);
      if (text === undefined) throw unsupportedPart(part, at, `a ${role} message`);
      return text;
    })
    .join(separator);
}

/** A `function_call_output`'s `output`: its text, and the images it returned (which a tool message cannot carry). */
export function toolOutput(output: unknown, path: string): { text: string; images: ChatPart[] } {
  if (output === undefined || output === null) throw invalid(path, 'Field required', 'missing_required_parameter');
  const texts: string[] = [];
  const images: ChatPart[] = [];
  partsOf(output, path).forEach((part, j) => {
    const at = `${path}[${j}]`;
    const text = textOf(part, at);
    if (text !== undefined) texts.push(text);
    else if (part.type === 'input_image') images.push(imagePart(part, at));
    else throw unsupportedPart(part, at, 'a function_call_output');
  });
  return { text: texts.join(''), images };
}

/** `input_image` as an `image_url` part; `original` detail (full resolution) is chat's `high`. */
function imagePart(part: Json, path: string): ChatPart {
  if (part.file_id !== undefined && part.file_id !== null) {
    throw unsupported(
      `${path}.file_id`,
      'images uploaded to the OpenAI Files API cannot be read through this gateway; send the ' +
        'image as `image_url` (a URL or a data URI)',
    );
  }
  if (typeof part.image_url !== 'string' || part.image_url === '')
    throw invalid(`${path}.image_url`, 'Field required (a URL or a data URI)', 'missing_required_parameter');
  const image: { url: string; detail?: string } = { url: part.image_url };
  const detail = part.detail;
  if (detail !== undefined && detail !== null) {
    if (typeof detail !== 'string' || !DETAILS.has(detail))
      throw invalid(
        `${path}.detail`,
        `must be one of "low", "high", "auto", "original" (got ${JSON.stringify(detail)})`,
      );
    image.detail = detail === 'original' ? 'high' : detail;
  }
  return { type: 'image_url', image_url: image };
}

function unsupportedPart(part: Json, path: string, where: string): Error {
  const type = String(part.type);
  if (type === 'input_file') {
    return unsupported(
      `${path}.type`,
      "files (`input_file`) need OpenAI's own document reader, which a chat-completions backend " +
        'does not have; send the text as `input_text` instead',
    );
  }
  if (type === 'input_audio')
    return unsupported(
      `${path}.type`,
      'audio input is not supported by a chat-completions backend behind this gateway',
    );
  if (type === 'input_image') return invalid(`${path}.type`, `images are not allowed in ${where}`);
  return invalid(`${path}.type`, `content part type "${type}" is not supported in ${where}`);
}
