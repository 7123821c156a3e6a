/**
 * A gateway for the Playground's tests and screenshots: a chat model on a fake vLLM, a speech
 * model on a fake llama-swap, a generation alias on a fake ComfyUI, behind a master key; and
 * the browser steps every Playground run starts with (log in, type the key, load the models).
 */
import type { Page } from 'playwright-core';
import type { GatewayConfig } from '../../src/config/types.ts';
import { startFake, type FakeBackend } from '../fakes/index.ts';
import { startComfyFake } from '../fakes/comfyui-server.ts';
import { fakeObjectInfo } from '../fakes/comfyui-nodes.ts';
import type { ComfyFake } from '../fakes/comfyui-types.ts';
import { startGateway, type TestGateway } from './gateway.ts';
import { FAST_COMFY, sd15Models } from './media-service.ts';

export const PLAYGROUND_KEY = 'master-key-playground-0123456789';

export interface PlaygroundRig {
  gw: TestGateway;
  llm: FakeBackend;
  tts: FakeBackend;
  comfy: ComfyFake;
  close(): Promise<void>;
}

/** A gateway with a chat model, a speech model and a generation alias, each on its fake. */
export async function startPlaygroundRig(overrides: Partial<GatewayConfig> = {}): Promise<PlaygroundRig> {
  const llm = await startFake('vllm', { knobs: { tokensPerSecond: 40, chunkCount: 24 } });
  const tts = await startFake('llamaswap', { models: ['kokoro'] });
  const comfy = await startComfyFake({
    objectInfo: fakeObjectInfo(),
    knobs: { stepMs: 60, steps: 20, previews: true },
  });
  const gw = await startGateway(
    [
      { name: 'gpu-box', url: llm.url },
      { name: 'tts-box', url: tts.url },
      { name: 'comfy', url: comfy.url, type: 'comfyui', ...FAST_COMFY },
    ],
    { api_key: PLAYGROUND_KEY, image_models: sd15Models(['comfy']), ...overrides },
  );
  return {
    gw,
    llm,
    tts,
    comfy,
    close: async () => {
      await gw.close();
      await Promise.all([llm.close(), tts.close(), comfy.close()]);
    },
  };
}

export async function loginPage(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/ui/login`);
  await page.fill('#key', key);
  await Promise.all([page.waitForURL(`${url}/ui`), page.click('button[type="submit"]')]);
}

/** Types the key and loads the models into the pickers. */
export async function useKey(page: Page, key: string): Promise<void> {
  await page.fill('#pg-key', key);
  await page.click('#pg-load-models');
  await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#pg-chat-model option').length > 1);
}
