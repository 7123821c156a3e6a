/**
 * The items of a Responses conversation as the store keeps them for `previous_response_id`:
 * each turn's input (a string input is one user message) followed by its output items.
 */
export function inputItems(input: unknown): unknown[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? input : [];
}

/** The history after a turn: the earlier turns, this input, this output. */
export function historyAfter(
  before: readonly unknown[],
  input: unknown,
  response: Record<string, unknown> | undefined,
): unknown[] {
  const output = Array.isArray(response?.output) ? response.output : [];
  return [...before, ...inputItems(input), ...output];
}
