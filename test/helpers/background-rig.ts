/** One chat backend (max_concurrent 1) behind a locked gateway, alias `r`, for the background Responses tests. */
import OpenAI from 'openai';
import type { GatewayConfig } from '../../src/config/types.ts';
import { startFake, type FakeBackend } from '../fakes/index.ts';
import { startGateway, type TestGateway } from './gateway.ts';

export interface BackgroundRig {
  local: FakeBackend;
  gw: TestGateway;
  client: OpenAI;
  close(): Promise<void>;
}

export async function startBackgroundRig(master: string, extra: Partial<GatewayConfig> = {}): Promise<BackgroundRig> {
  const local = await startFake('llamacpp', { models: ['qwen3-8b'] });
  const gw = await startGateway([{ name: 'local', url: local.url, max_concurrent: 1 }], {
    api_key: master,
    park_timeout_s: 0.2,
    async_park_timeout_s: 30,
    virtual_models: { r: { local: 'qwen3-8b' } },
    ...extra,
  });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: master, maxRetries: 0, timeout: 10_000 });
  return {
    local,
    gw,
    client,
    close: async () => {
      await gw.close();
      await local.close();
    },
  };
}
