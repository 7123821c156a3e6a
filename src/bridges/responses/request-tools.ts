/**
 * Responses tool definitions and `tool_choice` as chat-completions `tools`/`tool_choice`.
 *
 * Only function tools carry over: the client runs them and the backend only has to name them.
 * The Responses API defines them flat (`{type:"function", name, parameters}`), chat completions
 * nests them (`{type:"function", function:{name, parameters}}`). Every other tool type is run by
 * OpenAI itself (web search, file search, code interpreter, image generation, MCP connectors) or
 * relies on a grammar or protocol the model was trained on (`custom`, `shell`, `apply_patch`,
 * `computer_use_preview`, `local_shell`); a chat backend can do neither, so asking for one is a
 * 400 that names it, rather than an answer that silently lacks what the client counted on.
 */
import { invalid, isObject, unsupported, type Json } from './types.ts';

export interface ChatTools {
  tools?: Json[];
  tool_choice?: unknown;
  parallel_tool_calls?: boolean;
}

export function chatTools(body: Json): ChatTools {
  let tools = body.tools === undefined || body.tools === null ? [] : functionTools(body.tools);
  const out: ChatTools = {};
  let choice: unknown;
  if (body.tool_choice !== undefined && body.tool_choice !== null) {
    const names = tools.map((t) => (t.function as Json).name as string);
    const chosen = chatToolChoice(body.tool_choice, names);
    choice = chosen.choice;
    // `allowed_tools` narrows what the model may call this turn: the other tools are not offered at all
    if (chosen.allowed) tools = tools.filter((t) => chosen.allowed!.has((t.function as Json).name as string));
  }
  // without tools a choice or a parallel flag means nothing, and OpenAI-style servers refuse them alone
  if (tools.length === 0) return out;
  out.tools = tools;
  if (choice !== undefined) out.tool_choice = choice;
  const parallel = body.parallel_tool_calls;
  if (parallel !== undefined && parallel !== null) {
    if (typeof parallel !== 'boolean') throw invalid('parallel_tool_calls', 'must be a boolean', 'invalid_type');
    out.parallel_tool_calls = parallel;
  }
  return out;
}

function functionTools(tools: unknown): Json[] {
  if (!Array.isArray(tools)) throw invalid('tools', 'must be an array of tools', 'invalid_type');
  const seen = new Set<string>();
  return tools.map((tool, i) => {
    const path = `tools[${i}]`;
    if (!isObject(tool)) throw invalid(path, 'must be a tool object', 'invalid_type');
    if (typeof tool.type !== 'string') throw invalid(`${path}.type`, 'Field required', 'missing_required_parameter');
    if (tool.type !== 'function') {
      throw unsupported(
        `${path}.type`,
        `the "${tool.type}" tool is run by OpenAI or needs a protocol the model was trained on; ` +
          `the chat-completions backend behind this gateway cannot provide it — define it as a ` +
          `function tool (type "function") and run it yourself`,
      );
    }
    if (typeof tool.name !== 'string' || tool.name === '')
      throw invalid(`${path}.name`, 'Field required', 'missing_required_parameter');
    if (seen.has(tool.name)) throw invalid(`${path}.name`, `tool names must be unique ("${tool.name}" appears twice)`);
    seen.add(tool.name);
    const fn: Json = { name: tool.name };
    if (tool.description !== undefined && tool.description !== null) {
      if (typeof tool.description !== 'string')
        throw invalid(`${path}.description`, 'must be a string', 'invalid_type');
      if (tool.description !== '') fn.description = tool.description;
    }
    if (tool.parameters !== undefined && tool.parameters !== null) {
      if (!isObject(tool.parameters))
        throw invalid(`${path}.parameters`, 'must be an object holding a JSON schema', 'invalid_type');
      fn.parameters = tool.parameters;
    }
    if (tool.strict !== undefined && tool.strict !== null) {
      if (typeof tool.strict !== 'boolean') throw invalid(`${path}.strict`, 'must be a boolean', 'invalid_type');
      // passed only as the client set it: a default of true would make strict-mode backends refuse loose schemas
      fn.strict = tool.strict;
    }
    return { type: 'function', function: fn };
  });
}

/** The chat tool_choice, and for `allowed_tools` the names of the tools that stay. */
function chatToolChoice(choice: unknown, names: string[]): { choice: unknown; allowed?: Set<string> } {
  if (typeof choice === 'string') {
    if (choice === 'auto' || choice === 'none' || choice === 'required') return { choice };
    throw invalid('tool_choice', `must be "auto", "none", "required" or an object (got ${JSON.stringify(choice)})`);
  }
  if (!isObject(choice)) throw invalid('tool_choice', 'must be a string or an object', 'invalid_type');
  switch (choice.type) {
    case 'function':
      return { choice: { type: 'function', function: { name: knownName(choice.name, 'tool_choice.name', names) } } };
    case 'allowed_tools':
      return allowedTools(choice, names);
    case undefined:
    case null:
      throw invalid('tool_choice.type', 'Field required', 'missing_required_parameter');
    default:
      throw unsupported(
        'tool_choice.type',
        `the "${String(choice.type)}" tool cannot be run by the chat-completions backend behind ` +
          `this gateway; only function tools can be chosen`,
      );
  }
}

/** `{type:"allowed_tools", mode, tools:[{type:"function", name}, …]}`: those tools only, `mode` as the choice. */
function allowedTools(choice: Json, names: string[]): { choice: unknown; allowed: Set<string> } {
  const mode = choice.mode;
  if (mode !== 'auto' && mode !== 'required')
    throw invalid('tool_choice.mode', `must be "auto" or "required" (got ${JSON.stringify(mode)})`);
  if (!Array.isArray(choice.tools)) throw invalid('tool_choice.tools', 'must be an array of tools', 'invalid_type');
  const allowed = new Set<string>();
  choice.tools.forEach((tool, i) => {
    const path = `tool_choice.tools[${i}]`;
    if (!isObject(tool)) throw invalid(path, 'must be a tool object', 'invalid_type');
    if (tool.type !== 'function')
      throw unsupported(
        `${path}.type`,
        `the "${String(tool.type)}" tool cannot be run by the chat-completions backend behind ` +
          `this gateway; only function tools can be allowed`,
      );
    allowed.add(knownName(tool.name, `${path}.name`, names));
  });
  return { choice: mode, allowed };
}

function knownName(name: unknown, path: string, names: string[]): string {
  if (typeof name !== 'string' || name === '') throw invalid(path, 'Field required', 'missing_required_parameter');
  if (!names.includes(name)) throw invalid(path, `no function tool named "${name}" in tools`);
  return name;
}
