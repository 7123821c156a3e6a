/**
 * `/api/embed` (`input`: a string or a list of strings; `dimensions`) and the older
 * `/api/embeddings` (`prompt`: one string) as an OpenAI `/v1/embeddings` request. `truncate`,
 * `options` and `keep_alive` concern the server that loads the model: left out.
 */
import { invalid, OllamaRequestError, refusal, type Json, type OllamaProblem } from './types.ts';

export type EmbedEndpoint = 'embed' | 'embeddings';

export type OllamaToEmbeddings = { ok: true; body: Json } | { ok: false; error: OllamaProblem };

export function ollamaToEmbeddings(endpoint: EmbedEndpoint, body: Json, model: string): OllamaToEmbeddings {
  try {
    const out: Json = { model, input: endpoint === 'embed' ? embedInput(body.input) : promptInput(body.prompt) };
    const dimensions = body.dimensions;
    if (endpoint === 'embed' && dimensions !== undefined && dimensions !== null) {
      if (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 1) {
        throw invalid('dimensions', 'must be a positive whole number');
      }
      out.dimensions = dimensions;
    }
    return { ok: true, body: out };
  } catch (err) {
    return refusal(err);
  }
}

/** Ollama's own words for an input that is neither a string nor a list of strings. */
function embedInput(input: unknown): string | string[] {
  if (typeof input === 'string') return input;
  if (Array.isArray(input) && input.length && input.every((s) => typeof s === 'string')) return input;
  throw new OllamaRequestError('invalid input type', 'input');
}

function promptInput(prompt: unknown): string {
  if (typeof prompt === 'string') return prompt;
  throw invalid('prompt', 'must be a string');
}
