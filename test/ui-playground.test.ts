/**
 * The console's Playground over real sockets: a gateway on fakes (vLLM chat, llama-swap
 * speech, ComfyUI media). The page (behind the login, no key in it, each generation alias's
 * parameters and file slots, XSS-shaped alias names as text, no inline script or style), the
 * call-log lookup it reads the cost from, and in headless Chromium the three panels as real API
 * clients: a streamed chat answer arriving in pieces with the gateway's headers and cost, a
 * media job with a reference upload whose progress bar reaches 100 % and whose result appears,
 * speech played from a blob; the key only ever on /v1 requests, kept only when asked. (Browser
 * predicates are functions on `globalThis`: closures are not shipped, strings would need eval.)
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { JobView } from '../src/media/service-types.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import { launchChromium, skipWithoutChromium } from './helpers/browser.ts';
import { UiClient } from './helpers/ui.ts';
import { pngA } from './helpers/media-gateway.ts';
import { sd15Models } from './helpers/media-service.ts';
import { loginPage, PLAYGROUND_KEY, startPlaygroundRig, useKey, type PlaygroundRig } from './helpers/playground-rig.ts';

const XSS_ALIAS = '<b onmouseover=alert(1)>sd</b>';
const CHAT_MODEL = 'gpu-box/acme/Qwen3-8B-Instruct';
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('console · playground', () => {
  let rig: PlaygroundRig;
  let ui: UiClient;
  let url: string;

  before(async () => {
    const sd15 = sd15Models(['comfy'])!.sd15;
    sd15[0].fixed = [{ node: '310', field: 'cfg', value: 6.5 }];
    rig = await startPlaygroundRig({
      image_models: {
        sd15,
        [XSS_ALIAS]: sd15Models(['comfy'])!.sd15,
        wan: [{ backend: 'comfy', workflow_json: workflow('img2video_wan_lowram_api.json') }],
      },
    });
    url = rig.gw.url;
    ui = await UiClient.login({ url: url }, PLAYGROUND_KEY);
  });
  after(async () => rig?.close());

  test('the page: behind the login, no key in it, no inline script or style, each alias with its parameters and file slots', async () => {
    const anonymous = await new UiClient(url).get('/ui/playground');
    assert.equal(anonymous.status, 303);
    const html = await ui.html('/ui/playground');
    assert.ok(!html.includes(PLAYGROUND_KEY), 'no key in the HTML');
    assert.match(html, /<input id="pg-key" type="password" autocomplete="off"/);
    assert.ok(!/<input id="pg-key"[^>]*value=/.test(html), 'the key input starts empty');
    assert.ok(!/\sstyle="/.test(html), 'no inline style attribute');
    assert.ok(!/<script(?![^>]*\ssrc=)[^>]*>/.test(html), 'no inline script');
    for (const panel of ['chat', 'media', 'voice']) {
      assert.match(html, new RegExp(`role="tab" id="pg-tab-${panel}" aria-controls="pg-panel-${panel}"`));
      assert.match(html, new RegExp(`id="pg-panel-${panel}"[^>]*role="tabpanel" aria-labelledby="pg-tab-${panel}"`));
    }
    for (const id of [
      'pg-key',
      'pg-chat-model',
      'pg-chat-input',
      'pg-max-tokens',
      'pg-media-model',
      'pg-media-prompt',
      'pg-media-params',
      'pg-voice-model',
      'pg-voice-input',
    ]) {
      assert.match(html, new RegExp(`<label for="${id}"`), `a label for ${id}`);
    }
    // sd15: its parameters with the workflow's values, the pinned cfg not offered
    const sd15 = html.slice(
      html.indexOf('data-alias="sd15"'),
      html.indexOf('</fieldset>', html.indexOf('data-alias="sd15"')),
    );
    assert.match(sd15, /data-param="steps" data-default="30"/);
    assert.match(sd15, /data-param="sampler" data-default="&quot;euler&quot;"/);
    assert.ok(!sd15.includes('data-param="cfg"'), 'a pinned field is not offered');
    assert.match(sd15, /Pinned on comfy \(not settable\): <span class="mono">310.cfg<\/span>/);
    // wan: a reference image slot
    assert.match(
      html,
      /<input type="file" id="pg-file-a2-image" data-slot="image" data-kind="image" accept="image\/\*"/,
    );
    // the XSS-shaped alias: text
    assert.ok(!html.includes(XSS_ALIAS));
    assert.ok(html.includes('data-alias="&lt;b onmouseover=alert(1)&gt;sd&lt;/b&gt;"'));
  });

  test('the cost lookup: a call made with a key, read back by its request id from the call log; malformed ids refused', async () => {
    const since = Date.now();
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${PLAYGROUND_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    await res.text();
    const requestId = res.headers.get('x-request-id')!;
    let row: Record<string, unknown> = {};
    for (let i = 0; i < 50 && row.found !== true; i++) {
      row = (await (await ui.get(`/ui/playground/call?request_id=${requestId}&since=${since}`)).json()) as Record<
        string,
        unknown
      >;
      if (row.found !== true) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(row.found, true);
    assert.equal(row.backend, 'gpu-box');
    assert.equal(row.cost, '$0 (free backend)');
    assert.equal(typeof row.id, 'number');
    assert.ok((row.completion_tokens as number) > 0);
    assert.deepEqual(await (await ui.get('/ui/playground/call?request_id=no-such-call')).json(), { found: false });
    assert.equal((await ui.get('/ui/playground/call?request_id=%3Cscript%3E')).status, 400);
    assert.equal((await ui.get('/ui/playground/call')).status, 400);
    assert.equal(
      (await new UiClient(url).get(`/ui/playground/call?request_id=${requestId}`)).status,
      303,
      'behind the login',
    );
  });

  test(
    'in the browser: chat streams in pieces, media reaches 100 % with its result, speech plays; the key only on /v1',
    { skip: skipWithoutChromium },
    async () => {
      const browser = await launchChromium();
      try {
        const page = await (await browser.newContext()).newPage();
        const errors: string[] = [];
        page.on('pageerror', (err) => errors.push(err.message));
        page.on('console', (m) => {
          if (m.type() === 'error' && /Content Security Policy/.test(m.text())) errors.push(m.text());
        });
        const keyed: string[] = [];
        page.on('request', (req) => {
          if (req.headers().authorization) keyed.push(new URL(req.url()).pathname);
        });
        await loginPage(page, url, PLAYGROUND_KEY);
        await page.goto(`${url}/ui/playground`);

        // inline errors before anything is sent
        await page.click('#pg-chat-send');
        assert.match((await page.textContent('#pg-chat-model-error')) ?? '', /Choose a model/);
        assert.equal(await page.getAttribute('#pg-chat-input', 'aria-invalid'), 'true');
        await useKey(page, PLAYGROUND_KEY);
        assert.equal(await page.evaluate(() => (globalThis as any).sessionStorage.length), 0, 'not kept unless asked');
        await page.check('#pg-remember');
        assert.equal(
          await page.evaluate(() => (globalThis as any).sessionStorage.getItem('gw-playground-key')),
          PLAYGROUND_KEY,
        );
        await page.uncheck('#pg-remember');
        assert.equal(await page.evaluate(() => (globalThis as any).sessionStorage.length), 0);

        // chat: the answer grows while it streams
        await page.selectOption('#pg-chat-model', CHAT_MODEL);
        await page.check('input[name="reasoning"][value="off"]');
        await page.fill('#pg-chat-input', 'Say <b>hello</b>');
        await page.click('#pg-chat-send');
        const lengths = new Set<number>();
        while (await page.$('.pg-msg-assistant.streaming')) {
          lengths.add(((await page.textContent('.pg-msg-assistant .pg-msg-text').catch(() => '')) ?? '').length);
          await new Promise((r) => setTimeout(r, 30));
        }
        const partial = [...lengths].filter((n) => n > 0);
        const answer = (await page.textContent('.pg-msg-assistant .pg-msg-text')) ?? '';
        assert.ok(
          partial.filter((n) => n < answer.length).length >= 2,
          `seen in pieces: ${[...lengths].join(', ')} of ${answer.length}`,
        );
        assert.equal(await page.textContent('.pg-msg-user .pg-msg-text'), 'Say <b>hello</b>', 'the message as text');
        assert.equal(await page.$('.pg-msg-user b'), null);
        assert.equal(await page.textContent('[data-meta="backend"]'), 'gpu-box');
        assert.match((await page.textContent('[data-meta="tokens"]')) ?? '', /^\d+ \/ \d+/);
        await page.waitForFunction(() =>
          /free backend/.test((globalThis as any).document.querySelector('[data-meta="cost"]').textContent),
        );
        assert.match((await page.getAttribute('[data-meta="request"]', 'href')) ?? '', /^\/ui\/calls\/\d+$/);

        // media: a reference image as a data URI, progress to 100 %, the result as a blob
        await page.click('#pg-tab-media');
        assert.equal(await page.isVisible('#pg-panel-chat'), false);
        await page.selectOption('#pg-media-model', 'wan');
        await page.setInputFiles('#pg-file-a2-image', { name: 'ref.png', mimeType: 'image/png', buffer: pngA });
        await page.fill('#pg-media-prompt', 'waves');
        await page.fill('#pg-media-params', '{"steps": ');
        await page.click('#pg-media-run');
        assert.match((await page.textContent('#pg-media-params-error')) ?? '', /Not valid JSON/);
        await page.fill('#pg-media-params', '{"no_such_param": 1}');
        await page.click('#pg-media-run');
        await page.waitForSelector('#pg-media-error:not([hidden])');
        assert.match(
          (await page.textContent('#pg-media-params-error')) ?? '',
          /HTTP 400.*no_such_param/,
          'the API refusal next to the field',
        );
        await page.fill('#pg-media-params', '');
        await page.click('#pg-media-run');
        await page.waitForSelector('#pg-media-results video', { timeout: 20_000 });
        assert.equal(
          await page.evaluate(() => (globalThis as any).document.getElementById('pg-media-progress').value),
          100,
        );
        assert.equal(await page.textContent('#pg-media-pct'), '100%');
        assert.match((await page.getAttribute('#pg-media-results video', 'src')) ?? '', /^blob:/);
        const id = (await page.textContent('#pg-media-link'))!;
        const job = rig.gw.gateway.media.view(id, {
          owner: 'master',
          admin: true,
          allow: [],
          source: 't',
          userId: null,
        }) as JobView;
        assert.equal(job.inputs[0].sha256, sha256(pngA), 'the uploaded reference reached the job');

        // voice
        await page.click('#pg-tab-voice');
        await page.selectOption('#pg-voice-model', 'tts-box/kokoro');
        await page.fill('#pg-voice-input', 'Good evening.');
        await page.click('#pg-voice-run');
        await page.waitForSelector('#pg-voice-out:not([hidden])');
        assert.match((await page.getAttribute('#pg-voice-audio', 'src')) ?? '', /^blob:/);
        assert.equal(await page.getAttribute('#pg-voice-download', 'download'), 'speech.mp3');

        assert.ok(
          keyed.length > 0 && keyed.every((p) => p.startsWith('/v1/')),
          `the key went only to /v1: ${[...new Set(keyed)].join(' ')}`,
        );
        for (const p of [
          '/v1/models',
          '/v1/chat/completions',
          '/v1/generations',
          `/v1/jobs/${id}/events`,
          '/v1/audio/speech',
        ])
          assert.ok(keyed.includes(p), p);
        assert.deepEqual(errors, []);
      } finally {
        await browser.close();
      }
    },
  );
});
