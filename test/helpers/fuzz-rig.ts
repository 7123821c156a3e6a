/**
 * The fleet the HTTP fuzz runs against: an OpenAI-compatible fake (llama.cpp), a vLLM fake
 * (audio), an Anthropic fake, a Responses-native fake and two fake ComfyUIs with generation
 * aliases; and two gateways over them, one open and one locked (master key plus a user key).
 */
import type { GatewayConfig } from '../../src/config/types.ts';
import { startComfyFake } from '../fakes/comfyui-server.ts';
import { fakeObjectInfo } from '../fakes/comfyui-nodes.ts';
import type { ComfyFake } from '../fakes/comfyui-types.ts';
import {
  ANTHROPIC_FAKE_API_KEY,
  startAnthropicFake,
  startFake,
  type AnthropicFake,
  type FakeBackend,
} from '../fakes/index.ts';
import { startNativeResponsesFake, type NativeResponsesFake } from '../fakes/responses-native.ts';
import { startGateway, type BackendInput, type TestGateway } from './gateway.ts';
import { editObjectInfo, imageModels } from './media-gateway.ts';

export const FUZZ_MASTER = 'fuzz-master-key-0123456789';
const NATIVE_KEY = 'sk-native-fuzz-0123456789';
const FAST_COMFY = { poll_interval: 0.05, disconnect_grace: 0.5, max_wait: 10 } as const;

/** The aliases the generated requests name (besides odd ones). */
export const FUZZ_MODELS = {
  chat: ['l', 'v', 'fake-llama-3.1-8b-q4_k_m.gguf'],
  anthropic: ['c', 'claude-sonnet-4-5-20250929'],
  native: ['n'],
  audio: ['v', 'acme/Qwen3-8B-Instruct'],
  image: ['sd15', 'inpaint', 'wan', 'audio'],
} as const;

export interface FuzzGateway {
  name: 'open' | 'locked';
  gw: TestGateway;
  /** Keys a caller may present here (master first); none on the open gateway. */
  keys: string[];
}

export interface FuzzRig {
  gateways: FuzzGateway[];
  /** The OpenAI-compatible fake both gateways route `l` to, to make trouble on. */
  local: FakeBackend;
  close(): Promise<void>;
}

function fuzzConfig(): Partial<GatewayConfig> {
  return {
    virtual_models: {
      l: { local: 'fake-llama-3.1-8b-q4_k_m.gguf' },
      v: { vllm: 'acme/Qwen3-8B-Instruct' },
      c: { claude: 'claude-sonnet-4-5-20250929' },
      n: { nat: 'gpt-5.2' },
    },
    image_models: imageModels(),
    request_body_timeout_s: 2,
    park_timeout_s: 2,
    async_park_timeout_s: 2,
    media_park_timeout_s: 5,
    stream_idle_timeout_s: 4,
    // a silent backend's first byte is waited for this long (its own 504), under the client's 15 s
    request_timeout_s: 5,
  } as Partial<GatewayConfig>;
}

export async function startFuzzRig(): Promise<FuzzRig> {
  const closers: (() => Promise<void>)[] = [];
  const keep = <T extends { close(): Promise<void> }>(thing: T): T => {
    closers.push(() => thing.close());
    return thing;
  };
  try {
    // slow enough (≈ 50 ms a stream) that a burst fills the slots (cap 2) and parks
    const slow = { latencyMs: 10, tokensPerSecond: 200, chunkCount: 8 };
    const local: FakeBackend = keep(await startFake('llamacpp', { knobs: slow }));
    const vllm: FakeBackend = keep(await startFake('vllm'));
    const claude: AnthropicFake = keep(await startAnthropicFake({ knobs: { latencyMs: 30 } }));
    const native: NativeResponsesFake = keep(await startNativeResponsesFake({ apiKey: NATIVE_KEY }));
    const comfy: ComfyFake = keep(await startComfyFake({ objectInfo: fakeObjectInfo() }));
    const editKnobs = { validateCombos: false };
    const edit: ComfyFake = keep(await startComfyFake({ objectInfo: editObjectInfo(), knobs: editKnobs }));
    const backends: BackendInput[] = [
      { name: 'local', url: local.url, max_concurrent: 2 },
      { name: 'vllm', url: vllm.url },
      { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY, max_concurrent: 2 },
      { name: 'nat', url: native.url, responses: 'native', api_key: NATIVE_KEY, max_concurrent: 2 },
      { name: 'comfy', url: comfy.url, type: 'comfyui', ...FAST_COMFY },
      { name: 'edit', url: edit.url, type: 'comfyui', ...FAST_COMFY },
    ];
    const open = keep(await startGateway(backends, fuzzConfig()));
    const locked = keep(await startGateway(backends, { ...fuzzConfig(), api_key: FUZZ_MASTER }));
    const userKey = await createFuzzUser(locked.url);
    return {
      local,
      gateways: [
        { name: 'open', gw: open, keys: [] },
        { name: 'locked', gw: locked, keys: [FUZZ_MASTER, userKey] },
      ],
      close: async () => {
        for (const close of closers.reverse()) await close();
      },
    };
  } catch (err) {
    for (const close of closers.reverse()) await close();
    throw err;
  }
}

async function createFuzzUser(url: string): Promise<string> {
  const res = await fetch(`${url}/admin/api/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${FUZZ_MASTER}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'fuzzer' }),
  });
  if (res.status !== 201) throw new Error(`creating the fuzz user: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { key: string }).key;
}
