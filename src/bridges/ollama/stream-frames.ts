/**
 * The lines of an Ollama NDJSON stream, built from constant pieces around the one value that
 * changes (a text fragment), in the key order Ollama's server writes: `model`, `created_at`,
 * `message` (`role`, `content`, `thinking`, `tool_calls`) or `response` (`thinking`), `done`.
 * One string concatenation per line: a text fragment comes as the JSON string literal it was
 * in the chat chunk (ChatStreamReader.contentLiteral), so nothing is parsed or re-encoded.
 */
import type { Json, OllamaKind } from './types.ts';

/** The part of every line before its payload, for one call: model and timestamp. */
function head(modelJson: string, createdAt: string): string {
  return `{"model":${modelJson},"created_at":"${createdAt}",`;
}

/** A line carrying a fragment of the answer's text, given as a JSON string literal (copied from the chunk). */
export function contentLine(kind: OllamaKind, modelJson: string, createdAt: string, value: string): string {
  return kind === 'chat'
    ? `${head(modelJson, createdAt)}"message":{"role":"assistant","content":${value}},"done":false}\n`
    : `${head(modelJson, createdAt)}"response":${value},"done":false}\n`;
}

/** A line carrying a fragment of the model's thinking (`message.thinking`, or `thinking` beside `response`). */
export function thinkingLine(kind: OllamaKind, modelJson: string, createdAt: string, text: string): string {
  const value = JSON.stringify(text);
  return kind === 'chat'
    ? `${head(modelJson, createdAt)}"message":{"role":"assistant","content":"","thinking":${value}},"done":false}\n`
    : `${head(modelJson, createdAt)}"response":"","thinking":${value},"done":false}\n`;
}

/** The line with the answer's tool calls, whole (Ollama streams each call complete, arguments as an object). */
export function toolCallsLine(kind: OllamaKind, modelJson: string, createdAt: string, calls: Json[]): string {
  const value = JSON.stringify(calls);
  return kind === 'chat'
    ? `${head(modelJson, createdAt)}"message":{"role":"assistant","content":"","tool_calls":${value}},"done":false}\n`
    : `${head(modelJson, createdAt)}"response":"","done":false,"tool_calls":${value}}\n`;
}

/** The last line: empty content, `done: true`, the reason and the statistics. */
export function finalLine(kind: OllamaKind, modelJson: string, createdAt: string, tail: Json): string {
  const stats = JSON.stringify(tail).slice(1); // `"done":true,…}` without its opening brace
  return kind === 'chat'
    ? `${head(modelJson, createdAt)}"message":{"role":"assistant","content":""},${stats}\n`
    : `${head(modelJson, createdAt)}"response":"",${stats}\n`;
}
