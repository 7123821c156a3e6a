/**
 * Conversation affinity (prefix-cache warmth): a conversation's next turn is best sent to the
 * box that served its previous turn, whose KV cache may still hold the shared prefix. This
 * module is the pure part: the key that names a conversation, and a bounded store of where
 * each conversation was answered last. The scheduler weighs the box it names (`Ticket.stickTo`)
 * against the others' predicted waits; the proxy keeps the store (sets it after an answer,
 * drops it when that box fails).
 *
 * The key is the client's own `x-session-id` when it sends a usable one, else a hash of the
 * caller, the model and the conversation's seed (its system prompt and first user message,
 * conversation-seed.ts): both stay the same on every turn of one conversation, and the seed
 * needs no state beyond what the request carries. Keys are hashes, so a long prompt or session
 * id costs the store no more than a short one, and nothing the client wrote is kept.
 */
import { createHash } from 'node:crypto';

/** The longest `x-session-id` honoured; a longer one (or one with control characters) is ignored. */
export const SESSION_ID_MAX_LENGTH = 256;
/** Conversations remembered at most; past it the least recently answered is forgotten. */
export const AFFINITY_MAX_ENTRIES = 10_000;

const USABLE_SESSION_ID = /^[\x21-\x7e][\x20-\x7e]*$/;

/** The client's `x-session-id`, when it sent exactly one that is printable and at most SESSION_ID_MAX_LENGTH long. */
export function sessionIdOf(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string' || header.length > SESSION_ID_MAX_LENGTH) return undefined;
  const id = header.trim();
  return USABLE_SESSION_ID.test(id) ? id : undefined;
}

export interface ConversationOf {
  /** The client's session id (sessionIdOf), when it sent one: it wins over the seed. */
  sessionId?: string;
  /** Who calls (`TicketUser.key`): one user's conversations never share a key with another's. */
  user: string;
  /** The model asked for. */
  model: string;
  /** The conversation's seed (system prompt and first user message); called only without a session id. */
  seed: () => string | undefined;
}

/** The key of a call's conversation; undefined when it has neither a session id nor a seed. */
export function conversationKey(of: ConversationOf): string | undefined {
  const hash = createHash('sha256');
  if (of.sessionId !== undefined) {
    hash.update(`session\0${of.user}\0${of.model}\0${of.sessionId}`);
  } else {
    const seed = of.seed();
    if (!seed) return undefined;
    hash.update(`seed\0${of.user}\0${of.model}\0`).update(seed);
  }
  return hash.digest('base64url');
}

interface Entry {
  backend: string;
  expiresAt: number;
}

/**
 * Where each conversation was answered last, for `ttlMs` after that answer. Bounded: past
 * `maxEntries` the least recently answered conversation goes. A backend's conversations can
 * be dropped at once (it failed, or was marked down) through a per-backend index, so that
 * costs what the backend held, never a scan of the whole store. No timers: an expired entry
 * goes when it is next read, or when the bound pushes it out.
 */
export class ConversationAffinity {
  /** In order of the last answer (a Map keeps insertion order; an answer re-inserts). */
  private readonly entries = new Map<string, Entry>();
  private readonly byBackend = new Map<string, Set<string>>();

  constructor(private readonly maxEntries = AFFINITY_MAX_ENTRIES) {}

  get size(): number {
    return this.entries.size;
  }

  /** The backend that answered the conversation `key` last, unless that was more than its TTL ago. */
  backendFor(key: string, now: number): string | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > now) return entry.backend;
    this.delete(key, entry);
    return undefined;
  }

  /** `backend` answered the conversation `key`: its next turn goes there for `ttlMs` (0 = affinity off). */
  remember(key: string, backend: string, now: number, ttlMs: number): void {
    if (!(ttlMs > 0)) return;
    const old = this.entries.get(key);
    if (old) this.delete(key, old);
    this.entries.set(key, { backend, expiresAt: now + ttlMs });
    let keys = this.byBackend.get(backend);
    if (!keys) this.byBackend.set(backend, (keys = new Set()));
    keys.add(key);
    if (this.entries.size > this.maxEntries) this.evictOldest();
  }

  /** An attempt on `backend` failed: the conversation `key` is no longer tied to it (to another box, it stays). */
  forget(key: string, backend: string): void {
    const entry = this.entries.get(key);
    if (entry && entry.backend === backend) this.delete(key, entry);
  }

  /** `backend` is down, disabled or gone: none of its conversations stick to it any more. */
  forgetBackend(backend: string): void {
    const keys = this.byBackend.get(backend);
    if (!keys) return;
    for (const key of keys) this.entries.delete(key);
    this.byBackend.delete(backend);
  }

  private evictOldest(): void {
    const oldest = this.entries.keys().next();
    if (oldest.done) return;
    this.delete(oldest.value, this.entries.get(oldest.value)!);
  }

  private delete(key: string, entry: Entry): void {
    this.entries.delete(key);
    const keys = this.byBackend.get(entry.backend);
    if (!keys) return;
    keys.delete(key);
    if (keys.size === 0) this.byBackend.delete(entry.backend);
  }
}
