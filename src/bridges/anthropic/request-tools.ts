/**
 * Anthropic tool definitions and `tool_choice` as chat-completions `tools`/`tool_choice`.
 *
 * Only client tools carry over: the client runs them and the backend only has to name them.
 * Anthropic's server tools and versioned built-ins (`web_search_20250305`, `bash_20250124`,
 * `text_editor_…`, `computer_…`, `code_execution_…`, ...) are run by Anthropic itself or rely
 * on a schema the model was trained on; a chat backend can do neither, so asking for one is a
 * 400 that names it, rather than a call that silently behaves differently.
 */
import { invalid, isObject, type Json } from './types.ts';

export interface ChatTools {
  tools?: Json[];
  tool_choice?: unknown;
  parallel_tool_calls?: false;
}

export function chatTools(body: Json): ChatTools {
  const tools = body.tools === undefined || body.tools === null ? [] : functionTools(body.tools);
  const out: ChatTools = {};
  if (tools.length) out.tools = tools;
  const choice = body.tool_choice;
  if (choice === undefined || choice === null) return out;
  if (!isObject(choice)) throw invalid('tool_choice', 'must be an object');
  const names = tools.map((t) => (t.function as Json).name);
  const chat = chatToolChoice(choice, names);
  // without tools a choice means nothing, and some backends refuse `tool_choice` alone
  if (!tools.length) return out;
  out.tool_choice = chat;
  if (choice.disable_parallel_tool_use === true && choice.type !== 'none') out.parallel_tool_calls = false;
  return out;
}

function functionTools(tools: unknown): Json[] {
  if (!Array.isArray(tools)) throw invalid('tools', 'must be an array of tools');
  const seen = new Set<string>();
  return tools.map((tool, i) => {
    const path = `tools.${i}`;
    if (!isObject(tool)) throw invalid(path, 'must be a tool object');
    if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
      const name = typeof tool.name === 'string' ? `"${tool.name}" ` : '';
      throw invalid(
        `${path}.type`,
        `the Anthropic tool ${name}(${JSON.stringify(tool.type)}) runs on Anthropic's side or ` +
          `needs its built-in schema; a chat-completions backend cannot provide it — define it as a ` +
          `custom tool with an input_schema instead`,
      );
    }
    if (typeof tool.name !== 'string' || tool.name === '') throw invalid(`${path}.name`, 'Field required');
    if (seen.has(tool.name)) throw invalid(`${path}.name`, `tool names must be unique ("${tool.name}" appears twice)`);
    seen.add(tool.name);
    if (!isObject(tool.input_schema))
      throw invalid(`${path}.input_schema`, 'Field required (an object holding a JSON schema)');
    if (tool.description !== undefined && typeof tool.description !== 'string')
      throw invalid(`${path}.description`, 'must be a string');
    const fn: Json = { name: tool.name };
    if (tool.description !== undefined && tool.description !== '') fn.description = tool.description;
    fn.parameters = tool.input_schema;
    if (tool.strict === true) fn.strict = true;
    return { type: 'function', function: fn };
  });
}

/** auto → "auto", any → "required", tool → that function, none → "none". */
function chatToolChoice(choice: Json, names: unknown[]): unknown {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      if (typeof choice.name !== 'string' || choice.name === '') throw invalid('tool_choice.name', 'Field required');
      if (!names.includes(choice.name)) throw invalid('tool_choice.name', `no tool named "${choice.name}" in tools`);
      return { type: 'function', function: { name: choice.name } };
    default:
      throw invalid(
        'tool_choice.type',
        `must be one of "auto", "any", "tool", "none" (got ${JSON.stringify(choice.type)})`,
      );
  }
}
