/**
 * Message threads of the fake Anthropic API (beta `message-threads-2026-08-12`), as the SDK's
 * ThreadState expects the real server to hold them: `thread: {type: "create"}` holds the
 * conversation (its messages, `system` and `tools`, then the reply) under the reply's `id`;
 * `{type: "continue", previous_message_id}` sends only the new messages, takes `system` and
 * `tools` from the thread (and refuses them if repeated), and holds the longer conversation
 * under the new reply's id. An unknown id is `thread_not_found`, one continued already
 * `thread_already_continued` (the SDK replays the full history for both).
 */
import { anthropicError, type AnthropicErrorReply } from './anthropic-errors.ts';

export const THREADS_BETA = 'message-threads-2026-08-12';

interface HeldThread {
  messages: unknown[];
  system: unknown;
  tools: unknown;
  continued: boolean;
}

/** What a threaded request means: the body as the model sees it, and how to hold its reply. */
export interface ThreadTurn {
  /** The request with the thread's history, `system` and `tools` in place (no `thread`). */
  body: any;
  /** Holds the conversation with `reply` under `reply.id`. */
  hold(reply: { id: string; role: string; content: unknown }): void;
}

const refusal = (message: string, errorCode: string): AnthropicErrorReply => ({
  ...anthropicError(400, message),
  details: { error_code: errorCode },
});

export class FakeThreads {
  private readonly held = new Map<string, HeldThread>();

  /** Undefined when the request has no `thread`; a refusal, or the turn it continues. */
  turn(body: any, betas: string): ThreadTurn | AnthropicErrorReply | undefined {
    const thread = body?.thread;
    if (thread === undefined || thread === null) return undefined;
    if (
      !betas
        .split(',')
        .map((b) => b.trim())
        .includes(THREADS_BETA)
    ) {
      return anthropicError(400, 'thread: Extra inputs are not permitted');
    }
    if (thread.type === 'create') return this.start(body, [], body.system, body.tools);
    if (thread.type !== 'continue') return anthropicError(400, "thread.type: Input should be 'create' or 'continue'");
    const id = thread.previous_message_id;
    const before = typeof id === 'string' ? this.held.get(id) : undefined;
    if (!before) return refusal(`thread: no thread holds the message '${String(id)}'`, 'thread_not_found');
    if (before.continued) {
      return refusal(`thread: the message '${id}' was continued already`, 'thread_already_continued');
    }
    if (body.system !== undefined || body.tools !== undefined) {
      return anthropicError(
        400,
        'thread: `system` and `tools` are set when the thread is created; a continue cannot repeat them',
      );
    }
    before.continued = true;
    return this.start(body, before.messages, before.system, before.tools);
  }

  private start(body: any, earlier: unknown[], system: unknown, tools: unknown): ThreadTurn {
    const messages = [...earlier, ...(Array.isArray(body.messages) ? body.messages : [])];
    const { thread: _thread, ...rest } = body;
    const expanded = {
      ...rest,
      messages,
      ...(system !== undefined ? { system } : {}),
      ...(tools !== undefined ? { tools } : {}),
    };
    return {
      body: expanded,
      hold: (reply) => {
        const held = [...messages, { role: reply.role, content: reply.content }];
        this.held.set(reply.id, { messages: held, system, tools, continued: false });
      },
    };
  }
}
