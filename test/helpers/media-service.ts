/**
 * Media jobs driven through the gateway's media service directly (the routes have their own
 * tests): a caller, a text-to-image submit, and an alias on the real sd15 fixture workflow.
 */
import type { GatewayConfig } from '../../src/config/types.ts';
import type { GenerationSubmit, JobView, MediaCaller } from '../../src/media/service-types.ts';
import type { TestGateway } from './gateway.ts';
import { workflow } from './comfy-workflows.ts';

export function caller(owner = 'user:1', opts: Partial<MediaCaller> = {}): MediaCaller {
  return { owner, admin: false, allow: [], source: owner, userId: null, ...opts };
}

export const ADMIN = caller('master', { admin: true });

/** `image_models` with one alias on the sd15 txt2img fixture, one entry per backend. */
export function sd15Models(backends: string[], alias = 'sd15'): GatewayConfig['image_models'] {
  return { [alias]: backends.map((backend) => ({ backend, workflow_json: workflow('txt2img_sd15_api.json') })) };
}

/** Fast knobs for a comfyui backend in tests. */
export const FAST_COMFY = { poll_interval: 0.05, disconnect_grace: 0.5, max_wait: 30 } as const;

export async function submitText(
  gw: TestGateway,
  alias: string,
  params: Record<string, unknown> = {},
  who = caller(),
  prompt = 'a lighthouse',
): Promise<JobView> {
  const request: GenerationSubmit = {
    alias,
    prompt,
    params,
    files: {},
    endpoint: '/v1/generations',
    requestId: `t-${Math.random()}`,
  };
  return gw.gateway.media.submit(who, request);
}

export async function settle(gw: TestGateway, id: string): Promise<JobView> {
  return gw.gateway.media.settled(id);
}
