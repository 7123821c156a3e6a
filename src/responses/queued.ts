/**
 * The Response a background call answers with at once: status `queued`, no output yet, the
 * request's settings echoed as the finished one will have them.
 */
import { chatToResponse } from '../bridges/responses/response.ts';

export function queuedResponse(
  id: string,
  createdAt: number,
  model: string,
  request: Record<string, unknown>,
): Record<string, unknown> {
  const empty = { choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: null }] };
  const made = chatToResponse(empty, { id, createdAt, model, request });
  const response = made.ok ? made.response : { id, object: 'response', created_at: createdAt, model };
  return Object.assign(response, {
    status: 'queued',
    output: [],
    usage: null,
    background: true,
    error: null,
    incomplete_details: null,
  });
}
