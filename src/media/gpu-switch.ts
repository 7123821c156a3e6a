/**
 * What the gateway does when a GPU group (`gpu_groups`) switches between LLM and media work:
 * the scheduler's `onGroupSwitch` hook. Both actions are opt-in per group:
 *
 *   - to media, `unload_llm`: the group's openai backends (llama-swap) unload their models.
 *     llama-swap serves `POST /api/models/unload` (its documented API) and the older
 *     `GET /unload`; there is no `POST /unload` (405). So POST /api/models/unload first, and
 *     GET /unload when that path is missing (404 / 405, llama-swap before mid-2025).
 *   - to LLM, `free_media`: the group's ComfyUI backends `POST /free`
 *     `{"unload_models": true, "free_memory": true}` (200 with an empty body).
 *
 * Fire and forget: `onSwitch` returns at once (with a promise that never rejects), every HTTP
 * call has its own timeout (10 s), failures are logged and nothing else. `pending(group)` lets
 * a caller that wants the card freed first wait for a switch still under way.
 */
import { request, type Dispatcher } from 'undici';
import { describeError } from '../backends/errors.ts';
import { descriptorFor } from '../backends/kinds/index.ts';
import type { GroupSwitchEvent } from '../scheduler/index.ts';

/** The `gpu_groups` switches this module reads. */
export interface GpuSwitchGroup {
  unload_llm?: boolean;
  free_media?: boolean;
}

/** One backend of a group, as configured. */
export interface GpuSwitchMember {
  name: string;
  /** Base URL without a trailing `/v1`. */
  url: string;
  type: 'openai' | 'ollama' | 'anthropic' | 'comfyui';
  /** Sent as `Authorization: Bearer` (llama-swap's `apiKeys`, a proxy in front of ComfyUI). */
  apiKey?: string;
}

/** What is logged through (a pino Logger is one). */
export interface GpuSwitchLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface GpuSwitchDeps {
  /** The current `gpu_groups` (read at every switch, so a reload applies at once). */
  groups: () => Record<string, GpuSwitchGroup>;
  /** The backends that name the group now. */
  members: (group: string) => GpuSwitchMember[];
  /** The dispatcher to reach one backend; undici's global one when absent. */
  dispatcherFor?: (name: string, url: string) => Dispatcher;
  log: GpuSwitchLog;
  /** Timeout of each HTTP call, ms. Default 10 000. */
  timeoutMs?: number;
}

/** How one backend's request ended (for logs and tests). */
export interface SwitchCall {
  backend: string;
  action: 'unload_llm' | 'free_media';
  ok: boolean;
  /** `METHOD path` of the last request made. */
  request: string;
  status?: number;
  error?: string;
}

export const GPU_SWITCH_TIMEOUT_MS = 10_000;
/** What ComfyUI's /free is asked to do: drop the loaded models and free the memory. */
export const COMFY_FREE_BODY = Object.freeze({ unload_models: true, free_memory: true });

type HttpAnswer = { status: number } | { error: string };

export class GpuSwitch {
  private readonly inFlight = new Map<string, Set<Promise<SwitchCall[]>>>();

  constructor(private readonly deps: GpuSwitchDeps) {}

  /**
   * The scheduler's `onGroupSwitch`: starts the group's opt-in requests and returns at once.
   * Bound, so it can be passed as is. The promise never rejects; it resolves with what each
   * request did (empty when the group asks for nothing).
   */
  readonly onSwitch = (e: GroupSwitchEvent): Promise<SwitchCall[]> => {
    let started: Promise<SwitchCall[]>;
    try {
      started = this.start(e);
    } catch (err) {
      this.deps.log.warn({ group: e.group, err: describeError(err).detail }, 'gpu group switch: could not start');
      return Promise.resolve([]);
    }
    const set = this.inFlight.get(e.group) ?? new Set<Promise<SwitchCall[]>>();
    this.inFlight.set(e.group, set);
    set.add(started);
    void started.finally(() => {
      set.delete(started);
      if (set.size === 0 && this.inFlight.get(e.group) === set) this.inFlight.delete(e.group);
    });
    return started;
  };

  /** Resolves when every switch of `group` started so far has finished (at once when none is). */
  async pending(group: string): Promise<void> {
    const set = this.inFlight.get(group);
    if (set) await Promise.all(set);
  }

  private start(e: GroupSwitchEvent): Promise<SwitchCall[]> {
    const settings = this.deps.groups()[e.group];
    const action =
      e.to === 'media' && settings?.unload_llm
        ? 'unload_llm'
        : e.to === 'llm' && settings?.free_media
          ? 'free_media'
          : undefined;
    if (!action) return Promise.resolve([]);
    const targets = this.deps.members(e.group).filter((member) => descriptorFor(member.type).groupSwitch === action);
    return Promise.all(
      targets.map((member) => (action === 'unload_llm' ? this.unloadLlm(member) : this.freeMedia(member))),
    ).then((calls) => {
      for (const call of calls) {
        try {
          this.logCall(e, call);
        } catch {
          // A logger that throws must not turn a finished switch into a rejection.
        }
      }
      return calls;
    });
  }

  private async unloadLlm(member: GpuSwitchMember): Promise<SwitchCall> {
    const first = await this.call(member, 'POST', '/api/models/unload');
    if ('status' in first && (first.status === 404 || first.status === 405)) {
      return this.outcome(member, 'unload_llm', 'GET /unload', await this.call(member, 'GET', '/unload'));
    }
    return this.outcome(member, 'unload_llm', 'POST /api/models/unload', first);
  }

  private async freeMedia(member: GpuSwitchMember): Promise<SwitchCall> {
    return this.outcome(member, 'free_media', 'POST /free', await this.call(member, 'POST', '/free', COMFY_FREE_BODY));
  }

  private outcome(member: GpuSwitchMember, action: SwitchCall['action'], made: string, answer: HttpAnswer): SwitchCall {
    if ('error' in answer) return { backend: member.name, action, ok: false, request: made, error: answer.error };
    const ok = answer.status >= 200 && answer.status < 300;
    return {
      backend: member.name,
      action,
      ok,
      request: made,
      status: answer.status,
      ...(ok ? {} : { error: `HTTP ${answer.status}` }),
    };
  }

  /** One request with its own timeout; the body is read and dropped. Never throws. */
  private async call(
    member: GpuSwitchMember,
    method: 'GET' | 'POST',
    path: string,
    json?: unknown,
  ): Promise<HttpAnswer> {
    const timeoutMs = this.deps.timeoutMs ?? GPU_SWITCH_TIMEOUT_MS;
    const headers: Record<string, string> = {};
    if (member.apiKey) headers.authorization = `Bearer ${member.apiKey}`;
    if (json !== undefined) headers['content-type'] = 'application/json';
    const base = member.url.replace(/\/+$/, '');
    try {
      const dispatcher = this.deps.dispatcherFor?.(member.name, member.url);
      const res = await request(`${base}${path}`, {
        method,
        headers,
        body: json === undefined ? undefined : JSON.stringify(json),
        signal: AbortSignal.timeout(timeoutMs),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        ...(dispatcher ? { dispatcher } : {}),
      });
      await res.body.dump();
      return { status: res.statusCode };
    } catch (err) {
      return { error: describeError(err).detail };
    }
  }

  private logCall(e: GroupSwitchEvent, call: SwitchCall): void {
    const fields = {
      group: e.group,
      from: e.from,
      to: e.to,
      backend: call.backend,
      request: call.request,
      status: call.status,
    };
    if (call.ok)
      this.deps.log.info(fields, `gpu group ${e.group} switched to ${e.to}: ${call.action} on ${call.backend}`);
    else
      this.deps.log.warn(
        { ...fields, err: call.error },
        `gpu group ${e.group} switched to ${e.to}: ${call.action} on ${call.backend} failed`,
      );
  }
}
