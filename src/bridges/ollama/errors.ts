/**
 * Errors in Ollama's shape, `{"error": "<text>"}`: its clients read that string and nothing
 * else (the npm and Python libraries raise it; a stream's `{"error"}` line ends the stream).
 */
import { isObject } from './types.ts';

/** A chat backend's error answer (OpenAI's `{error: {message}}`, a string, plain text) in Ollama's shape. */
export function ollamaErrorFromUpstream(status: number, text: string): { error: string } {
  return { error: upstreamMessage(text) || `the backend answered HTTP ${status}` };
}

function upstreamMessage(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text.slice(0, 2000).trim();
  }
  if (!isObject(parsed)) return text.slice(0, 2000).trim();
  const error = parsed.error;
  if (typeof error === 'string') return error;
  if (isObject(error) && typeof error.message === 'string') return error.message;
  if (typeof parsed.message === 'string') return parsed.message;
  if (typeof parsed.detail === 'string') return parsed.detail;
  return text.slice(0, 2000).trim();
}

/** One `{"error": …}` line, the last of an NDJSON stream that failed. */
export function ollamaErrorLine(message: string): string {
  return `${JSON.stringify({ error: message })}\n`;
}
