import { request, type Dispatcher } from 'undici';
import type { BackendSpec } from '../config/types.ts';
import { basePath } from '../upstream/pools.ts';
import { kindForStatus } from './errors.ts';
import { parseModelList } from './model-list.ts';
import type { ModelInfo } from './types.ts';

export class ProbeError extends Error {
  constructor(readonly kind: ReturnType<typeof kindForStatus>, readonly status: number | undefined, message: string) {
    super(message);
  }
}

/** Credential headers a backend of this kind expects. */
export function credentialHeaders(spec: BackendSpec): Record<string, string> {
  if (!spec.api_key) return {};
  if (spec.type === 'anthropic') return { 'x-api-key': spec.api_key, 'anthropic-version': '2023-06-01' };
  return { authorization: `Bearer ${spec.api_key}` };
}

/**
 * Asks a backend what it serves, without ever loading a model: `GET /v1/models` for
 * OpenAI-compatible and Anthropic backends, `GET /system_stats` for ComfyUI (its node list is
 * the media layer's business). Throws ProbeError or a network error.
 */
export async function probeBackend(spec: BackendSpec, dispatcher: Dispatcher, timeoutMs: number): Promise<ModelInfo[]> {
  const path = spec.type === 'comfyui' ? '/system_stats' : '/v1/models';
  const res = await request(`${new URL(spec.url).origin}${basePath(spec.url)}${path}`, {
    method: 'GET',
    dispatcher,
    headers: { accept: 'application/json', ...credentialHeaders(spec) },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) {
    throw new ProbeError(kindForStatus(res.statusCode), res.statusCode, `GET ${path} answered ${res.statusCode}: ${text.slice(0, 200)}`);
  }
  if (spec.type === 'comfyui') return [];
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ProbeError('error', 200, `GET ${path} answered with something that is not JSON`);
  }
  return parseModelList(body, { chatOnly: spec.chat_only, serverlessOnly: spec.serverless_only });
}
