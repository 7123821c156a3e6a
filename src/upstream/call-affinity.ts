/**
 * The proxy's side of conversation affinity (routing/conversation-affinity.ts): what an
 * attempt's end teaches the store, and the fleet changes that empty it for a box.
 */
import type { BackendRegistry } from '../backends/registry.ts';
import type { ConversationAffinity } from '../routing/conversation-affinity.ts';
import type { AttemptEnd } from './attempt-end.ts';

/** A box down, disabled, draining or removed keeps none of its conversations. */
export function dropUnfitBoxes(affinity: ConversationAffinity, registry: BackendRegistry): void {
  const unfit = (name: string) => {
    const b = registry.get(name);
    if (!b || !b.healthy || !b.spec.enabled || b.draining) affinity.forgetBackend(name);
  };
  registry.onChange(unfit);
  registry.onRemoved(unfit);
}

/** One attempt of the conversation `key` on `backend` ended as `end`. */
export interface AttemptOfConversation {
  key: string;
  backend: string;
  end: AttemptEnd;
  /** The client left: an attempt that ended so says nothing of the box. */
  clientGone: boolean;
  now: number;
  ttlMs: number;
}

/**
 * The conversation's next turn goes where this one was answered (a 200); a box that failed it
 * (failover, a broken stream, its credential refused) is dropped, the conversation free to
 * stick to whichever box answers it next.
 */
export function learnAffinity(affinity: ConversationAffinity, a: AttemptOfConversation): void {
  const { end } = a;
  const failed = end.failover
    ? !a.clientGone
    : end.health === 'failure' || end.health === 'unreachable' || end.health === 'auth';
  if (failed) affinity.forget(a.key, a.backend);
  else if (end.health === 'ok' && end.outcome?.status === 200) affinity.remember(a.key, a.backend, a.now, a.ttlMs);
}
