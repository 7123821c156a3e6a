/**
 * The output items of a streamed Response and the events that build them.
 *
 * One item is open at a time, as the API streams them: a `reasoning` item (one summary part),
 * a `message` item (its content parts, `output_text` or `refusal`, one after the other) or a
 * `function_call` item. Each item is `output_item.added` (with the item as it starts), its
 * parts' `added` / deltas / `done`, then `output_item.done` (with the item as it ends); a new
 * item closes the open one. The items are kept as they grow, so that the Response of the final
 * (or `failed`) event, and the one the store keeps, holds exactly what the deltas said.
 *
 * Every event gets the next `sequence_number`: there is one counter per stream, owned here.
 */
import { newFunctionCallId, newMessageId, newReasoningId } from './ids.ts';
import {
  functionCallItem,
  messageItem,
  outputTextPart,
  reasoningItem,
  refusalPart,
  summaryTextPart,
} from './response-object.ts';
import { deltaFrame, responsesEvent } from './stream-frames.ts';
import type { Json } from './types.ts';

export type ItemKind = 'reasoning' | 'message' | 'function_call';
type PartKind = 'output_text' | 'refusal';

interface OpenItem {
  kind: ItemKind;
  index: number;
  id: string;
  item: Json;
  /** message: the open content part's kind and index. */
  part?: PartKind;
  partIndex: number;
}

export class StreamOutput {
  /** The items so far, open ones as they stand. */
  readonly items: Json[] = [];
  private sequence = 0;
  private open: OpenItem | undefined;

  /** The sequence number the next event gets. */
  get nextSequence(): number {
    return this.sequence;
  }

  get openKind(): ItemKind | undefined {
    return this.open?.kind;
  }

  /** An event with the next sequence number. */
  event(type: string, payload: Json, out: string[]): void {
    out.push(responsesEvent(type, { ...payload, sequence_number: this.sequence++ }));
  }

  reasoning(fragment: string, out: string[]): void {
    let open = this.open;
    if (open?.kind !== 'reasoning') {
      open = this.openItem('reasoning', newReasoningId(), (id) => reasoningItem(id, []), out);
      (open.item.summary as Json[]).push(summaryTextPart(''));
      this.event(
        'response.reasoning_summary_part.added',
        { item_id: open.id, output_index: open.index, part: summaryTextPart(''), summary_index: 0 },
        out,
      );
    }
    const part = (open.item.summary as Json[])[0];
    part.text += fragment;
    out.push(deltaFrame('summary', open.id, open.index, 0, fragment, this.sequence++));
  }

  /** Text or refusal into the open message item (a new one if another kind of item is open). */
  content(kind: PartKind, fragment: string, out: string[]): void {
    let open = this.open;
    if (open?.kind !== 'message')
      open = this.openItem('message', newMessageId(), (id) => messageItem(id, 'in_progress', []), out);
    const parts = open.item.content as Json[];
    if (open.part !== kind) {
      this.closePart(open, out);
      open.part = kind;
      open.partIndex = parts.length;
      parts.push(kind === 'output_text' ? outputTextPart('') : refusalPart(''));
      this.event(
        'response.content_part.added',
        { content_index: open.partIndex, item_id: open.id, output_index: open.index, part: emptyPart(kind) },
        out,
      );
    }
    const part = parts[open.partIndex];
    if (kind === 'output_text') part.text += fragment;
    else part.refusal += fragment;
    out.push(
      deltaFrame(
        kind === 'output_text' ? 'text' : 'refusal',
        open.id,
        open.index,
        open.partIndex,
        fragment,
        this.sequence++,
      ),
    );
  }

  /** A function_call item for a call whose name is known; its arguments follow with `arguments`. */
  functionCall(callId: string, name: string, out: string[]): void {
    this.openItem(
      'function_call',
      newFunctionCallId(),
      (id) => functionCallItem(id, 'in_progress', callId, name, ''),
      out,
    );
  }

  /** An arguments fragment for the open function_call item. */
  arguments(fragment: string, out: string[]): void {
    const open = this.open;
    if (open?.kind !== 'function_call' || fragment === '') return;
    open.item.arguments += fragment;
    out.push(deltaFrame('arguments', open.id, open.index, 0, fragment, this.sequence++));
  }

  /** Ends the open item with `status` (`completed`, or `incomplete` when the answer was cut short there). */
  close(status: 'completed' | 'incomplete', out: string[]): void {
    const open = this.open;
    if (!open) return;
    // a call without parameters: `{}`, the JSON a client can parse, and the deltas still add up to it
    if (open.kind === 'function_call' && open.item.arguments === '') this.arguments('{}', out);
    this.open = undefined;
    const { item, id, index } = open;
    if (open.kind === 'reasoning') {
      const part = (item.summary as Json[])[0];
      this.event(
        'response.reasoning_summary_text.done',
        { item_id: id, output_index: index, summary_index: 0, text: part.text },
        out,
      );
      this.event(
        'response.reasoning_summary_part.done',
        { item_id: id, output_index: index, part: { ...part }, summary_index: 0 },
        out,
      );
    } else if (open.kind === 'message') {
      this.closePart(open, out);
      item.status = status;
    } else {
      this.event(
        'response.function_call_arguments.done',
        { arguments: item.arguments, item_id: id, name: item.name, output_index: index },
        out,
      );
      item.status = status;
    }
    this.event('response.output_item.done', { item, output_index: index }, out);
  }

  private openItem(kind: ItemKind, id: string, make: (id: string) => Json, out: string[]): OpenItem {
    this.close('completed', out);
    const item = make(id);
    const open: OpenItem = { kind, index: this.items.length, id, item, partIndex: -1 };
    this.items.push(item);
    this.open = open;
    this.event('response.output_item.added', { item, output_index: open.index }, out);
    return open;
  }

  private closePart(open: OpenItem, out: string[]): void {
    if (open.part === undefined) return;
    const part = (open.item.content as Json[])[open.partIndex];
    const at = { content_index: open.partIndex, item_id: open.id };
    if (open.part === 'output_text')
      this.event('response.output_text.done', { ...at, logprobs: [], output_index: open.index, text: part.text }, out);
    else this.event('response.refusal.done', { ...at, output_index: open.index, refusal: part.refusal }, out);
    this.event('response.content_part.done', { ...at, output_index: open.index, part }, out);
    open.part = undefined;
  }
}

function emptyPart(kind: PartKind): Json {
  return kind === 'output_text' ? outputTextPart('') : refusalPart('');
}
