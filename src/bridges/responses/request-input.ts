/**
 * A Responses conversation (the stored earlier turns, then this request's `input`) as a
 * chat-completions `messages` array.
 *
 * The two APIs cut a conversation differently. Responses keeps every step as its own item: a
 * message, each function call, each call's output. Chat completions gives all the calls of one
 * assistant turn to one assistant message (`tool_calls`), and each result its own `tool` message
 * right after it. So consecutive `function_call` items become one assistant message with several
 * calls, joined to the assistant text directly before them if there is one (what the model said
 * before calling); `function_call_output` items become tool messages.
 *
 * Reasoning items are dropped: their encrypted content only means something to OpenAI, and chat
 * templates either ignore past reasoning or want it in a field of their own. Dropping one is
 * invisible to the merge above, as OpenAI puts reasoning between a message and its calls.
 *
 * `item_reference` items (the AI SDK sends them for earlier output when `store` is on) name an
 * item by id: the earlier items of the conversation are searched first, then `resolveItem` (the
 * store). A reference to reasoning (`rs_…`) that nobody can resolve is dropped like reasoning.
 */
import { textContent, toolOutput, userContent, type ChatPart } from './request-content.ts';
import { BridgeFailure, invalid, isObject, unsupported, type Json } from './types.ts';

export type ChatMessage = Json;

export interface ConversationSource {
  /** The stored items of the earlier turns, oldest first. */
  history?: unknown[];
  input: unknown;
  /** The stored item of this id (an earlier output item), or undefined. */
  resolveItem?: (id: string) => unknown;
}

/** Item types of OpenAI's built-in tools: a chat backend can neither have made them nor continue them. */
const BUILT_IN_ITEMS = new Set([
  'file_search_call',
  'web_search_call',
  'computer_call',
  'computer_call_output',
  'image_generation_call',
  'code_interpreter_call',
  'local_shell_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'mcp_call',
  'custom_tool_call',
  'custom_tool_call_output',
  'tool_search_call',
  'tool_search_output',
  'additional_tools',
  'program',
  'program_output',
]);

/** Context compaction items hold OpenAI's encrypted summary of earlier turns: nothing a backend can read. */
const OPAQUE_ITEMS = new Set(['compaction', 'compaction_trigger', 'configuration_update']);

export function conversation(source: ConversationSource): ChatMessage[] {
  const builder = new ConversationBuilder(source.resolveItem);
  const history = source.history ?? [];
  if (!Array.isArray(history)) throw new TypeError('history must be an array');
  history.forEach((item, i) => {
    try {
      builder.add(typeof item === 'string' ? { role: 'user', content: item } : item, `history[${i}]`);
    } catch (err) {
      // the client never sent these items in this request: name the field that brought them in
      if (err instanceof BridgeFailure)
        throw invalid(
          'previous_response_id',
          `an item stored with the previous response cannot be used (${err.error.message})`,
        );
      throw err;
    }
  });
  const input = source.input;
  if (input === undefined || input === null) throw invalid('input', 'Field required', 'missing_required_parameter');
  if (typeof input === 'string') builder.add({ type: 'message', role: 'user', content: input }, 'input');
  else if (Array.isArray(input)) input.forEach((item, i) => builder.add(item, `input[${i}]`));
  else throw invalid('input', 'must be a string or an array of input items', 'invalid_type');
  const messages = builder.finish();
  if (messages.length === 0) throw invalid('input', 'the conversation holds no message', 'empty_array');
  return messages;
}

class ConversationBuilder {
  private readonly messages: ChatMessage[] = [];
  /** The last message is an assistant turn that a following function_call joins. */
  private assistantOpen = false;
  /** Images that tool outputs returned: they go in one user message after the run of tool messages. */
  private toolImages: ChatPart[] = [];
  private readonly seen = new Map<string, unknown>();

  constructor(private readonly resolveItem?: (id: string) => unknown) {}

  add(raw: unknown, path: string): void {
    if (!isObject(raw)) throw invalid(path, 'must be an input item object', 'invalid_type');
    const item = raw.type === 'item_reference' ? this.resolve(raw, path) : raw;
    if (item === undefined) return;
    if (typeof item.id === 'string' && item.id !== '') this.seen.set(item.id, item);
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message':
        this.message(item, path);
        break;
      case 'function_call':
        this.functionCall(item, path);
        break;
      case 'function_call_output':
        this.functionCallOutput(item, path);
        break;
      case 'reasoning':
        break;
      case undefined:
        throw invalid(`${path}.type`, 'Field required', 'missing_required_parameter');
      default:
        if (typeof type === 'string' && BUILT_IN_ITEMS.has(type)) {
          throw unsupported(
            `${path}.type`,
            `"${type}" items belong to a tool OpenAI runs itself, which the chat-completions backend ` +
              `behind this gateway cannot continue`,
          );
        }
        if (typeof type === 'string' && OPAQUE_ITEMS.has(type)) {
          throw unsupported(
            `${path}.type`,
            `"${type}" items hold state only OpenAI can read; the chat-completions backend behind ` +
              `this gateway cannot use them`,
          );
        }
        throw invalid(`${path}.type`, `unknown input item type ${JSON.stringify(type)}`);
    }
  }

  finish(): ChatMessage[] {
    this.flushToolImages();
    return this.messages;
  }

  private resolve(ref: Json, path: string): Json | undefined {
    const id = ref.id;
    if (typeof id !== 'string' || id === '')
      throw invalid(`${path}.id`, 'Field required', 'missing_required_parameter');
    const found = this.seen.get(id) ?? this.resolveItem?.(id);
    if (isObject(found) && found.type !== 'item_reference') return found;
    if (id.startsWith('rs_')) return undefined;
    throw invalid(
      `${path}.id`,
      `no stored item "${id}": only items of responses this gateway stored (store: true) can be ` +
        `referenced; send the item itself instead (the AI SDK does with ` +
        `providerOptions.openai.store = false)`,
      'item_not_found',
    );
  }

  private push(message: ChatMessage, assistantOpen: boolean): void {
    if (message.role !== 'tool') this.flushToolImages();
    this.messages.push(message);
    this.assistantOpen = assistantOpen;
  }

  private message(item: Json, path: string): void {
    if (item.content === undefined || item.content === null)
      throw invalid(`${path}.content`, 'Field required', 'missing_required_parameter');
    const at = `${path}.content`;
    switch (item.role) {
      case 'user':
        this.push({ role: 'user', content: userContent(item.content, at) }, false);
        break;
      case 'assistant':
        this.push({ role: 'assistant', content: textContent(item.content, at, 'assistant') }, true);
        break;
      case 'system':
      case 'developer':
        // chat completions has no developer role on most backends: it is the system prompt's job
        this.push({ role: 'system', content: textContent(item.content, at, item.role) }, false);
        break;
      case undefined:
      case null:
        throw invalid(`${path}.role`, 'Field required', 'missing_required_parameter');
      default:
        throw invalid(
          `${path}.role`,
          `must be "user", "assistant", "system" or "developer" (got ${JSON.stringify(item.role)})`,
        );
    }
  }

  private functionCall(item: Json, path: string): void {
    const callId = requiredString(item.call_id, `${path}.call_id`);
    const name = requiredString(item.name, `${path}.name`);
    let args = item.arguments;
    if (isObject(args)) args = JSON.stringify(args);
    if (typeof args !== 'string')
      throw invalid(
        `${path}.arguments`,
        'must be a string holding JSON',
        args === undefined ? 'missing_required_parameter' : 'invalid_type',
      );
    const call = { id: callId, type: 'function', function: { name, arguments: args } };
    const last = this.messages[this.messages.length - 1];
    if (this.assistantOpen && last && last.role === 'assistant') {
      const calls = Array.isArray(last.tool_calls) ? last.tool_calls : (last.tool_calls = []);
      calls.push(call);
      if (last.content === '') last.content = null;
      return;
    }
    this.push({ role: 'assistant', content: null, tool_calls: [call] }, true);
  }

  private functionCallOutput(item: Json, path: string): void {
    const callId = requiredString(item.call_id, `${path}.call_id`);
    const { text, images } = toolOutput(item.output, `${path}.output`);
    const note = images.length
      ? `[${images.length} image${images.length === 1 ? '' : 's'} from this result follow in the next user message]`
      : '';
    this.push({ role: 'tool', tool_call_id: callId, content: note ? (text ? `${text}\n${note}` : note) : text }, false);
    this.toolImages.push(...images);
  }

  /** Tool messages must follow their assistant message unbroken: images they returned wait until the run ends. */
  private flushToolImages(): void {
    if (this.toolImages.length === 0) return;
    const images = this.toolImages;
    this.toolImages = [];
    this.messages.push({ role: 'user', content: images });
    this.assistantOpen = false;
  }
}

function requiredString(value: unknown, path: string): string {
  if (value === undefined || value === null || value === '')
    throw invalid(path, 'Field required', 'missing_required_parameter');
  if (typeof value !== 'string') throw invalid(path, 'must be a string', 'invalid_type');
  return value;
}
