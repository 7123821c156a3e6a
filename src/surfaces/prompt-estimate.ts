/**
 * A call's prompt size, estimated from its parsed body before it is sent, for the scheduler's
 * prefill term (`Ticket.promptTokens`): prompt tokens ÷ the box's learnt prefill rate. It only
 * has to grow with the prompt and land near the truth, so it is the gateway's one estimate
 * (about four characters of text per token, wire/token-estimate.ts), read off the body the
 * route parsed already: no second parse, no serialising of images.
 */
import { estimateInputTokens, estimateResponsesTokens, estimateStringsTokens } from '../wire/prompt-tokens.ts';

type Body = Record<string, unknown>;

/**
 * Estimated prompt tokens of a call to `endpoint`; undefined where the body says nothing of
 * it (an audio upload). `history`: a Responses call's stored earlier items, sent with it.
 */
export function promptTokenEstimate(endpoint: string, body: Body, history?: readonly unknown[]): number | undefined {
  switch (endpoint) {
    case 'chat':
    case 'messages':
    case 'ollama-chat':
      // chat messages (Ollama's too) are read the same way: string contents, text parts, a flat cost per image
      return estimateInputTokens(body);
    case 'responses':
      return estimateResponsesTokens(body, history);
    case 'completions':
      return estimateStringsTokens(body.prompt);
    case 'embeddings':
    case 'ollama-embed':
      return estimateStringsTokens(body.input);
    case 'ollama-generate':
      return estimateStringsTokens([body.system, body.prompt]);
    case 'ollama-embeddings':
      return estimateStringsTokens(body.prompt);
    default:
      return undefined;
  }
}
