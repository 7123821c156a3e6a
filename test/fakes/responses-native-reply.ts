/**
 * What the fake OpenAI Responses API answers, in the shapes of OpenAI's API reference: the
 * Response object, its stream's events (each with `sequence_number`), the input items list
 * (`GET /v1/responses/{id}/input_items`) and the errors. Pure: responses-native.ts sends them.
 */
import { randomBytes } from 'node:crypto';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
export const newResponseId = () => `resp_${hex(25)}`;
export const newItemId = (prefix: string) => `${prefix}_${hex(25)}`;

export function openaiError(status: number, message: string, param: string | null = null, code: string | null = null) {
  return { status, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

export const responseNotFound = (id: string) => openaiError(404, `Response with id '${id}' not found.`);

/** A request's `input` as stored input items, each with an id (a string is one user message). */
export function storedInputItems(input: unknown): Record<string, unknown>[] {
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : [];
  return items.map((item: any) => {
    if (item?.type === undefined || item.type === 'message') {
      const content = typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : item.content;
      return { id: item.id ?? newItemId('msg'), type: 'message', role: item.role, content, status: 'completed' };
    }
    return { id: item.id ?? newItemId('fc'), ...item };
  });
}

/** The finished Response: one output message whose text says how many items the model saw. */
export function finishedResponse(body: any, id: string, contextItems: number, text?: string): Record<string, unknown> {
  const said = text ?? `seen ${contextItems} items`;
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: body.model,
    parallel_tool_calls: true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: body.store !== false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: body.tools ?? [],
    top_p: 1,
    truncation: 'disabled',
    metadata: body.metadata ?? {},
    output: [
      {
        id: newItemId('msg'),
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: said, annotations: [] }],
      },
    ],
    usage: {
      input_tokens: 10 * contextItems,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: said.split(' ').length,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 10 * contextItems + said.split(' ').length,
    },
  };
}

/** The stream of `final`, event by event (name and data), as OpenAI sends it. */
export function streamEvents(final: Record<string, any>): { event: string; data: Record<string, unknown> }[] {
  const message = final.output[0];
  const text: string = message.content[0].text;
  const pending = { ...final, status: 'in_progress', output: [], usage: null };
  const words = text.split(/(?<= )/);
  const base = { item_id: message.id, output_index: 0, content_index: 0 };
  const openItem = { ...message, status: 'in_progress', content: [] };
  const emptyPart = { type: 'output_text', text: '', annotations: [] };
  const events: { event: string; data: Record<string, unknown> }[] = [
    { event: 'response.created', data: { response: pending } },
    { event: 'response.in_progress', data: { response: pending } },
    { event: 'response.output_item.added', data: { output_index: 0, item: openItem } },
    { event: 'response.content_part.added', data: { ...base, part: emptyPart } },
    ...words.map((delta) => ({ event: 'response.output_text.delta', data: { ...base, delta, logprobs: [] } })),
    { event: 'response.output_text.done', data: { ...base, text, logprobs: [] } },
    { event: 'response.content_part.done', data: { ...base, part: message.content[0] } },
    { event: 'response.output_item.done', data: { output_index: 0, item: message } },
    { event: 'response.completed', data: { response: final } },
  ];
  return events.map((e, i) => ({ event: e.event, data: { type: e.event, ...e.data, sequence_number: i } }));
}

/** One page of input items: newest first unless `order=asc`, `limit` 1–100 (20), after the `after` id. */
export function inputItemsPage(items: readonly Record<string, unknown>[], query: URLSearchParams) {
  const limit = query.has('limit') ? Number(query.get('limit')) : 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    const message =
      `Invalid 'limit': integer below minimum value. Expected a value >= 1 and <= 100, ` +
      `but got ${query.get('limit')} instead.`;
    return openaiError(400, message, 'limit', 'integer_below_min_value');
  }
  const ordered = query.get('order') === 'asc' ? [...items] : [...items].reverse();
  const after = query.get('after');
  const start = after ? ordered.findIndex((item) => item.id === after) + 1 : 0;
  const data = ordered.slice(start, start + limit);
  return {
    status: 200,
    body: {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: start + data.length < ordered.length,
    },
  };
}
