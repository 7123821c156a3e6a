import { request, type Dispatcher } from 'undici';
import type { BackendSpec } from '../config/types.ts';
import { basePath } from './pools.ts';
import { ExecutorStuck, type MediaHealthCheck } from './media-health.ts';
import { credentialHeaders } from './credentials.ts';
import { kindOf } from './kinds/index.ts';
import { kindForStatus } from './errors.ts';
import { parseModelList } from './model-list.ts';
import type { ModelInfo } from './types.ts';

export class ProbeError extends Error {
  constructor(
    readonly kind: ReturnType<typeof kindForStatus>,
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** Statuses of a model list refused to this credential: a configured `models:` list stands in. */
const LIST_REFUSED = new Set([401, 403, 404]);

/**
 * Asks a backend what it serves, without ever loading a model: the GET its kind names
 * (`/v1/models` for OpenAI-compatible and Anthropic backends, all of Anthropic's on one page;
 * `/system_stats` for ComfyUI, whose node list is the media layer's business). A backend that
 * will not list its models to this credential (a Claude subscription token cannot) but has a
 * configured `models:` list is up with that list. Throws ProbeError or a network error.
 */
export async function probeBackend(
  spec: BackendSpec,
  dispatcher: Dispatcher,
  timeoutMs: number,
  comfy?: MediaHealthCheck,
): Promise<ModelInfo[]> {
  const { path, reads } = kindOf(spec).probe;
  const base = `${new URL(spec.url).origin}${basePath(spec.url)}`;
  const res = await request(`${base}${path}`, {
    method: 'GET',
    dispatcher,
    headers: { accept: 'application/json', ...credentialHeaders(spec) },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200 && spec.models?.length && LIST_REFUSED.has(res.statusCode)) return configuredModels(spec);
  if (res.statusCode !== 200) {
    throw new ProbeError(
      kindForStatus(res.statusCode),
      res.statusCode,
      `GET ${path} answered ${res.statusCode}: ${text.slice(0, 200)}`,
    );
  }
  if (reads === 'comfy-health') {
    try {
      await comfy?.check(spec, base, dispatcher, timeoutMs, credentialHeaders(spec));
    } catch (err) {
      if (err instanceof ExecutorStuck) throw new ProbeError('exec_stuck', undefined, err.message);
      throw new ProbeError(
        'upstream',
        200,
        `ComfyUI answered /system_stats but not its queue or node list: ${(err as Error).message}`,
      );
    }
    return [];
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ProbeError('error', 200, `GET ${path} answered with something that is not JSON`);
  }
  return parseModelList(body, { chatOnly: spec.chat_only, serverlessOnly: spec.serverless_only });
}

function configuredModels(spec: BackendSpec): ModelInfo[] {
  return [...new Set(spec.models)].map((id) => ({ id }));
}
