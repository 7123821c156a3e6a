/**
 * Generation aliases as the store keeps them and as the service checks them, over real HTTP:
 * a workflow's baked-in seed beyond 2^53 saved through the console's Mapping tab and through
 * PUT /admin/api/settings/image_models comes back digit for digit (the store, the API, the
 * editor); a mapping naming a node the workflow lacks or a field its class lacks is refused by
 * the admin API as well as by the tab (the service's check, with key paths), while a warning
 * alone does not block; an alias named like an Object.prototype key is a 404, not a 500.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { fakeObjectInfo } from './fakes/comfyui-nodes.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { formFields } from './helpers/mapping-form.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'ui-mapping-checks-master-0123456789';
const FAST = { poll_interval: 0.05, disconnect_grace: 0.5, max_wait: 30 } as const;
const BIG = '9007199254740993'; // 2^53 + 1: JSON.parse makes it …992

/** The sd15 workflow as text, its seed primitive (node 69) set to BIG without ever being a JS number. */
const bigSeedText = () =>
  JSON.stringify(workflow('txt2img_sd15_api.json'), null, 2).replace(
    /("69": \{\s*"inputs": \{\s*"value": )-1/,
    `$1${BIG}`,
  );

describe('generation aliases: exact seeds, the service check, odd names', () => {
  let gw: TestGateway;
  let comfy: ComfyFake;
  let ui: UiClient;

  before(async () => {
    comfy = await startComfyFake({ objectInfo: fakeObjectInfo() });
    gw = await startGateway([{ name: 'comfy-a', url: comfy.url, type: 'comfyui', ...FAST }], { api_key: MASTER });
    ui = await UiClient.login(gw, MASTER);
  });
  after(async () => {
    await gw?.close();
    await comfy?.close();
  });

  const api = async (method: string, path: string, body?: string) => {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      body,
      headers: {
        authorization: `Bearer ${MASTER}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
    });
    return { status: res.status, text: await res.text() };
  };
  const storedSeed = (alias: string) => {
    const table = gw.gateway.settings.get('image_models') as Record<
      string,
      { workflow_json: Record<string, { inputs: Record<string, unknown> }> }[]
    >;
    return table[alias][0].workflow_json['69'].inputs.value;
  };

  test('a seed beyond 2^53 saved through the Mapping tab is stored and read back exactly', async () => {
    const text = bigSeedText();
    assert.ok(text.includes(`"value": ${BIG}`));
    await ui.get('/ui/mapping');
    const registered = await ui.post('/ui/mapping/register', {
      alias: 'big-ui',
      workflow: text,
      backends: ['comfy-a'],
    });
    assert.equal(registered.status, 200);
    const fields = formFields(await registered.text(), 'id="mapping-editor"');
    const saved = await ui.post('/ui/mapping', { ...fields, _csrf: [], action: 'save' });
    assert.equal(saved.status, 303, (await saved.text()).slice(0, 1500));
    assert.equal(storedSeed('big-ui'), BigInt(BIG), 'the store holds the exact integer');
    const viaApi = await api('GET', '/admin/api/settings/image_models');
    assert.equal(viaApi.status, 200);
    assert.match(viaApi.text, new RegExp(`"value":${BIG}\\b`));
    const editor = await ui.html('/ui/mapping/big-ui');
    assert.match(editor, new RegExp(`&quot;value&quot;: ${BIG}\\b`), 'the editor shows the digits as saved');
    assert.doesNotMatch(editor, /9007199254740992/);
  });

  test('a seed beyond 2^53 PUT through the admin API is stored and read back exactly; a job page shows it as pinned and sent', async () => {
    const pin = `{"node": "310", "field": "steps", "value": 4}, {"node": "69", "field": "value", "value": ${BIG}}`;
    const body = `{"value": {"big-api": [{"backend": "comfy-a", "workflow_json": ${bigSeedText()}, "fixed": [${pin}]}]}}`;
    const put = await api('PUT', '/admin/api/settings/image_models', body);
    assert.equal(put.status, 200, put.text.slice(0, 1500));
    assert.match(put.text, new RegExp(`"value":${BIG}\\b`));
    assert.equal(storedSeed('big-api'), BigInt(BIG));
    const again = await api('GET', '/admin/api/settings/image_models');
    assert.match(again.text, new RegExp(`"value":${BIG}\\b`));
    assert.ok(gw.gateway.generations.get('big-api'), 'the catalog serves it');
    const job = await fetch(`${gw.url}/v1/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: '{"model": "big-api", "prompt": "exact", "params": {"width": 64, "height": 64}}',
    });
    const answer = await job.text();
    assert.equal(job.status, 200, answer);
    assert.match(answer, new RegExp(`"seed":"${BIG}"`), 'the pinned seed was sent');
    const id = /"id":"([^"]+)"/.exec(answer)![1];
    const page = await ui.get(`/ui/jobs/${id}`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, new RegExp(`<td[^>]*>${BIG}</td>`), 'the pin, digit for digit');
  });

  test('the admin API refuses a mapping to an unknown node or field, with key paths; nothing stored', async () => {
    const before = await api('GET', '/admin/api/settings/image_models');
    const entry = (mapping: unknown) =>
      JSON.stringify({
        value: { bad: [{ backend: 'comfy-a', workflow_json: workflow('txt2img_sd15_api.json'), mapping }] },
      });
    const node = await api(
      'PUT',
      '/admin/api/settings/image_models',
      entry({ prompt: { node: '999', field: 'value' } }),
    );
    assert.equal(node.status, 400, node.text);
    assert.match(node.text, /image_models\.bad\[0\]\.mapping\.prompt\.node/);
    assert.match(node.text, /no node '999'/);
    const field = await api(
      'PUT',
      '/admin/api/settings/image_models',
      entry({ prompt: { node: '61', field: 'no_such_input' } }),
    );
    assert.equal(field.status, 400, field.text);
    assert.match(field.text, /image_models\.bad\[0\]\.mapping\.prompt\.field/);
    assert.match(field.text, /has no input 'no_such_input'/);
    assert.equal((await api('GET', '/admin/api/settings/image_models')).text, before.text, 'nothing stored');
    assert.equal(gw.gateway.generations.get('bad'), undefined);
  });

  test('a warning alone does not block: a mapped field that is also pinned is saved', async () => {
    const value = {
      warned: [
        {
          backend: 'comfy-a',
          workflow_json: workflow('txt2img_sd15_api.json'),
          mapping: { prompt: { node: '61', field: 'value' } },
          fixed: [{ node: '61', field: 'value', value: 'always this' }],
        },
      ],
    };
    const ok = await api('PUT', '/admin/api/settings/image_models', JSON.stringify({ value }));
    assert.equal(ok.status, 200, ok.text);
    assert.ok(gw.gateway.generations.get('warned'));
    assert.ok(
      gw.gateway.generations
        .problems()
        .some((p) => p.severity === 'warning' && p.path.startsWith('image_models.warned')),
      'the warning stands',
    );
  });

  test('an alias named like an Object.prototype key is a 404 page, not a 500', async () => {
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const res = await ui.get(`/ui/mapping/${name}`);
      assert.equal(res.status, 404, name);
      assert.match(await res.text(), /There is no generation alias/);
      await ui.get('/ui/mapping');
      const del = await ui.post(`/ui/mapping/${name}/delete`, {});
      assert.equal(del.status, 404, `delete ${name}`);
    }
  });
});
