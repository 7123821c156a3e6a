/**
 * `type: ollama`: an Ollama server. Its OpenAI-compatible `/v1` answers every surface an openai
 * backend answers (same probe, credential and translations); it also speaks Ollama's native
 * `/api/*`, and says which models it holds loaded at `/api/ps`. It has no llama-swap unload.
 */
import { openaiKind } from './openai.ts';
import type { BackendKind } from './types.ts';

export const ollamaKind: BackendKind = {
  ...openaiKind,
  type: 'ollama',
  native: [...openaiKind.native, 'ollama'],
  residency: 'ollama',
  groupSwitch: undefined,
  loadAnswers: [],
};
