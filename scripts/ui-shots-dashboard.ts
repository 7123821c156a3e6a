/** Screenshots of the dashboard (light/dark, desktop/phone) into test-artifacts/ui/. */
import { startFake } from '../test/fakes/index.ts';
import { startComfyFake } from '../test/fakes/comfyui-server.ts';
import { startGateway } from '../test/helpers/gateway.ts';
import { launchChromium, logIn, newContext, shoot } from '../test/helpers/browser.ts';
import { sd15Models, submitText } from '../test/helpers/media-service.ts';

const fake = await startFake('vllm', { models: ['qwen3-8b', '<script>x</script>'], knobs: { tokensPerSecond: 5, chunkCount: 50 } });
const comfy = await startComfyFake({ knobs: { stepMs: 400, steps: 20, previews: true } });
const gw = await startGateway([
  { name: 'gpu-box', url: fake.url, max_concurrent: 1 },
  { name: 'down-box', url: 'http://127.0.0.1:9' },
  { name: 'comfy', url: comfy.url, type: 'comfyui', poll_interval: 0.1 },
], { api_key: 'shots-master-key-0000', image_models: sd15Models(['comfy']) });
await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer shots-master-key-0000', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'qwen3-8b', messages: [{ role: 'user', content: 'hi' }] }) });
void fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer shots-master-key-0000', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'qwen3-8b', stream: true, messages: [{ role: 'user', content: 'long' }] }) });
await submitText(gw, 'sd15');
await submitText(gw, 'sd15');
await new Promise((r) => setTimeout(r, 1500));
const browser = await launchChromium();
for (const viewport of ['desktop', 'phone'] as const) {
  for (const scheme of ['light', 'dark'] as const) {
    const context = await newContext(browser, { viewport, scheme });
    const page = await context.newPage();
    await logIn(page, gw.url, 'shots-master-key-0000');
    await page.waitForTimeout(1200);
    console.log(await shoot(page, `dashboard-${viewport}-${scheme}`));
    await context.close();
  }
}
await browser.close();
await gw.close();
await fake.close();
await comfy.close();
