/**
 * The mapping tab over real HTTP: a real gateway with two fake ComfyUI boxes (comfy-a: the
 * fake's own object_info, combos checked; comfy-b: the base-install object_info dump with the fixture
 * workflows' custom nodes), the real fixture workflows read in place, and the console driven
 * like a browser (the editor posted back as rendered, with a few fields changed).
 *
 * Register a pasted workflow → the suggested mapping with object_info's ranges; save → the
 * generation catalog serves it and a real job runs on the fake; a checkpoint pinned per backend
 * from each backend's own choices; the UI format refused; a mapping to an unknown node refused
 * next to its field with nothing saved; the dry run's diff, pruned and bypassed nodes (and the
 * compile error naming the slot) with nothing stored and nothing queued; CSRF; escaping.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { fakeObjectInfo } from './fakes/comfyui-nodes.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { call, editObjectInfo } from './helpers/media-gateway.ts';
import { formFields, mappingRows, selectOptions, type FormFields } from './helpers/mapping-form.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'ui-mapping-master-key-0123456789';
const FAST = { poll_interval: 0.05, disconnect_grace: 0.5, max_wait: 30 } as const;
const EDITOR = 'id="mapping-editor"';

const wfText = (name: string) => JSON.stringify(workflow(name), null, 2);
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : (v ?? ''));

describe('the mapping tab', () => {
  let gw: TestGateway;
  let a: ComfyFake;
  let b: ComfyFake;
  let ui: UiClient;

  before(async () => {
    a = await startComfyFake({ objectInfo: fakeObjectInfo() });
    b = await startComfyFake({ objectInfo: editObjectInfo(), knobs: { validateCombos: false } });
    gw = await startGateway(
      [
        { name: 'comfy-a', url: a.url, type: 'comfyui', ...FAST },
        { name: 'comfy-b', url: b.url, type: 'comfyui', ...FAST },
      ],
      { api_key: MASTER },
    );
    ui = await UiClient.login(gw, MASTER);
  });
  after(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
  });

  const stored = () => structuredClone(gw.gateway.config().image_models);
  const register = async (alias: string, text: string, backends = ['comfy-a', 'comfy-b']) => {
    await ui.get('/ui/mapping');
    return ui.post('/ui/mapping/register', { alias, workflow: text, backends });
  };
  const editorOf = async (res: Response) => {
    const html = await res.text();
    return { html, fields: formFields(html, EDITOR) };
  };
  // the client adds the page's token itself (the form's own _csrf field would be a second one)
  const submit = (fields: FormFields, action: string, opts: { csrf?: string } = {}) =>
    ui.post('/ui/mapping', { ...fields, _csrf: [], action }, opts);

  test('pasting the sd15 workflow shows the suggested mapping with object_info ranges; nothing is stored', async () => {
    const res = await register('sd15ui', wfText('txt2img_sd15_api.json'));
    assert.equal(res.status, 200);
    const { html, fields } = await editorOf(res);
    const rows = mappingRows(fields);
    for (const param of [
      'prompt',
      'negative_prompt',
      'seed',
      'width',
      'height',
      'steps',
      'cfg',
      'sampler',
      'scheduler',
    ])
      assert.ok(rows.has(param), `suggested ${param}`);
    assert.deepEqual([rows.get('prompt')!.node, rows.get('prompt')!.field], ['61', 'value']);
    assert.deepEqual([rows.get('seed')!.node, rows.get('width')!.node, rows.get('steps')!.node], ['69', '146', '310']);
    const steps = rows.get('steps')!;
    assert.match(
      html,
      new RegExp(`id="m${steps.k}-hint">INT · min 1 · max 10000`),
      'numeric fields show min/max from object_info',
    );
    assert.ok(selectOptions(html, `m${steps.k}_node`).values.includes('312'), 'the node list is the workflow');
    assert.ok(
      selectOptions(html, `m${steps.k}_field`).values.includes('cfg'),
      "the field list is the node class's inputs",
    );
    assert.match(html, /Lora Loader Stack \(rgthree\)/, 'the LoRA slots are listed');
    assert.equal(stored().sd15ui, undefined);
  });

  test('save: the catalog serves the alias and a real job runs on the fake', async () => {
    const { fields } = await editorOf(await register('sd15ui', wfText('txt2img_sd15_api.json')));
    const res = await submit(fields, 'save');
    assert.equal(
      res.status,
      303,
      await res
        .clone()
        .text()
        .then((t) => t.slice(0, 2000)),
    );
    assert.equal(res.headers.get('location'), '/ui/mapping/sd15ui?saved=1');
    const model = gw.gateway.generations.get('sd15ui');
    assert.deepEqual(
      model?.candidates.map((c) => c.backend),
      ['comfy-a', 'comfy-b'],
    );
    assert.equal(gw.gateway.admin.settingView('image_models')?.source, 'store');
    const job = await call(gw.url, 'POST', '/v1/generations', MASTER, {
      model: 'sd15ui',
      prompt: 'a fox from the console',
      params: { width: 512, height: 384, seed: 7 },
    });
    assert.equal(job.status, 200, JSON.stringify(job.body));
    assert.equal(job.body.status, 'done');
    assert.equal(job.body.backend, 'comfy-a');
    const sent = a.prompts.at(-1)!.prompt;
    assert.equal(sent['61'].inputs.value, 'a fox from the console');
    assert.equal(sent['146'].inputs.value, 512);
    const page = await ui.html('/ui/mapping/sd15ui?saved=1');
    assert.match(page, /Saved sd15ui: it is live/);
    const list = await ui.html('/ui/mapping');
    assert.match(list, /href="\/ui\/mapping\/sd15ui"/);
    assert.match(list, /comfy-a → comfy-b/);
    assert.match(list, /kind-image/);
  });

  test("pins per backend: a checkpoint from each backend's own choices", async () => {
    const { fields } = await editorOf(await ui.get('/ui/mapping/sd15ui'));
    Object.assign(fields, {
      b0_p0_node: '312',
      b0_p0_field: 'ckpt_name',
      b0_p0_value: 'v1-5-pruned-emaonly-fp16.safetensors',
      b1_p0_node: '312',
      b1_p0_field: 'ckpt_name',
      b1_p0_value: 'v1-5-pruned-emaonly.safetensors',
    });
    const checked = await submit(fields, 'check');
    assert.equal(checked.status, 200);
    const { html, fields: again } = await editorOf(checked);
    const onA = selectOptions(html, 'b0_p0_value');
    const onB = selectOptions(html, 'b1_p0_value');
    assert.equal(onA.selected, 'v1-5-pruned-emaonly-fp16.safetensors');
    assert.ok(
      onA.values.includes('SD15-Cyberrealistic-fp32.safetensors') &&
        !onA.values.includes('v1-5-pruned-emaonly.safetensors'),
      "comfy-a's checkpoints",
    );
    assert.equal(onB.selected, 'v1-5-pruned-emaonly.safetensors');
    assert.ok(
      onB.values.includes('sd3.5_medium.safetensors') && !onB.values.includes('SD15-Cyberrealistic-fp32.safetensors'),
      "comfy-b's checkpoints",
    );
    assert.match(
      html,
      /<template data-choices="b1" data-node="312" data-field="ckpt_name">/,
      'choices for the script to swap in',
    );

    const res = await submit(again, 'save');
    assert.equal(res.status, 303);
    const entries = stored().sd15ui;
    assert.deepEqual(
      entries.map((e) => e.fixed),
      [
        [{ node: '312', field: 'ckpt_name', value: 'v1-5-pruned-emaonly-fp16.safetensors' }],
        [{ node: '312', field: 'ckpt_name', value: 'v1-5-pruned-emaonly.safetensors' }],
      ],
    );
    const job = await call(gw.url, 'POST', '/v1/generations', MASTER, { model: 'sd15ui', prompt: 'pinned' });
    assert.equal(job.status, 200, JSON.stringify(job.body));
    // whichever box ran it, it ran that box's pin
    const ran = job.body.backend === 'comfy-a' ? a : b;
    assert.equal(
      ran.prompts.at(-1)!.prompt['312'].inputs.ckpt_name,
      job.body.backend === 'comfy-a' ? 'v1-5-pruned-emaonly-fp16.safetensors' : 'v1-5-pruned-emaonly.safetensors',
    );

    // the dry run on comfy-b shows its own pin in the diff
    const { fields: edit } = await editorOf(await ui.get('/ui/mapping/sd15ui'));
    const dry = await submit({ ...edit, s_backend: 'comfy-b' }, 'compile');
    const dryHtml = await dry.text();
    assert.match(dryHtml, /Compiled for comfy-b/);
    assert.match(
      dryHtml,
      /ckpt_name<\/td><td class="mono before">&quot;SD15-Cyberrealistic-fp32.safetensors&quot;<\/td><td class="mono after">&quot;v1-5-pruned-emaonly.safetensors&quot;/,
    );
  });

  test("ComfyUI's UI format is refused with the Export (API) hint, nothing stored", async () => {
    const before = stored();
    const res = await register(
      'ui-format',
      JSON.stringify({ last_node_id: 9, nodes: [{ id: 1, type: 'KSampler' }], links: [] }),
    );
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, /id="workflow-error">[^<]*UI format[^<]*Export \(API\)/);
    assert.match(html, /id="workflow"[^>]*aria-invalid="true"/);
    assert.deepEqual(stored(), before);
    const notJson = await register('broken', '{"3": ');
    assert.equal(notJson.status, 400);
    assert.match(await notJson.text(), /This is not JSON/);
  });

  test('a mapping to an unknown node is refused next to its field, nothing saved', async () => {
    const before = stored();
    const { fields } = await editorOf(await ui.get('/ui/mapping/sd15ui'));
    const prompt = mappingRows(fields).get('prompt')!;
    fields[`m${prompt.k}_node`] = '999';
    const res = await submit(fields, 'save');
    assert.equal(res.status, 400);
    const html = await res.text();
    assert.match(html, new RegExp(`id="m${prompt.k}-node"[^>]*aria-invalid="true"`));
    assert.match(html, new RegExp(`id="m${prompt.k}-node-error">[^<]*no node &#39;999&#39;`));
    assert.match(html, /Nothing was saved/);
    assert.match(
      html,
      /href="#m\d+-node"><code>image_models.sd15ui\[0\].mapping.prompt.node<\/code>/,
      'the summary names the key path',
    );
    assert.deepEqual(stored(), before);
    // a field its class does not have, the same way
    fields[`m${prompt.k}_node`] = '61';
    fields[`m${prompt.k}_field`] = 'no_such_input';
    const field = await submit(fields, 'save');
    assert.equal(field.status, 400);
    assert.match(
      await field.text(),
      new RegExp(`id="m${prompt.k}-field-error">[^<]*has no input &#39;no_such_input&#39;`),
    );
    assert.deepEqual(stored(), before);
  });

  test('dry run on the Trellis mesh workflow: a disable slot, the diff, pruned and bypassed nodes; nothing stored or queued', async () => {
    const queued = [a.prompts.length, b.prompts.length];
    const { fields } = await editorOf(await register('mesh', wfText('img2mesh-trellis2_high_api.json'), ['comfy-b']));
    const image = mappingRows(fields).get('image')!;
    assert.equal(image.node, '58');
    fields[`m${image.k}_mode`] = 'disable';
    fields.b1_bypass = '53, 41';
    const res = await submit({ ...fields, s_backend: 'comfy-b', s_img: 'image' }, 'compile');
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /Compiled for comfy-b/);
    const removed = /<ul class="node-list removed">([\s\S]*?)<\/ul>/.exec(html)?.[1] ?? '';
    const ids = [...removed.matchAll(/<li>(\S+) ·/g)].map((m) => m[1]);
    assert.deepEqual(ids, ['36', '37', '38', '39', '46', '49', '57', '70', '71', '82', '83']);
    assert.match(/<ul class="node-list bypassed">([\s\S]*?)<\/ul>/.exec(html)?.[1] ?? '', /53 · [\s\S]*41 · /);
    assert.match(
      html,
      /<td>58 · input_image · Trellis2LoadImageWithTransparency<\/td><td class="mono">image<\/td><td class="mono before">&quot;0.png&quot;<\/td><td class="mono after">&quot;gw_dryrun_image.png&quot;/,
    );
    // the same slot left empty: disabling it would prune every output → the compile error names it
    const empty = await submit({ ...fields, s_backend: 'comfy-b' }, 'compile');
    const refused = await empty.text();
    assert.match(refused, /Compile refused on comfy-b/);
    assert.match(refused, /parameter <code class="dry-param">image<\/code>/);
    assert.match(refused, /&#39;image&#39; is needed by this model&#39;s output/);
    assert.equal(stored().mesh, undefined);
    assert.deepEqual([a.prompts.length, b.prompts.length], queued, 'no job');
  });

  test('dry run with a disable slot on qwen img2img: the loader is pruned and its optional consumers unwired', async () => {
    const { fields } = await editorOf(await register('qwen-edit', wfText('img2img_qwen_api.json'), ['comfy-b']));
    const slot = mappingRows(fields).get('image_2')!;
    fields[`m${slot.k}_mode`] = 'disable';
    const res = await submit(
      { ...fields, s_backend: 'comfy-b', s_img: ['image', 'image_3'], s_extra: '{"prompt": "make it blue"}' },
      'compile',
    );
    const html = await res.text();
    const removed = /<ul class="node-list removed">([\s\S]*?)<\/ul>/.exec(html)?.[1] ?? '';
    assert.deepEqual(
      [...removed.matchAll(/<li>(\S+) ·/g)].map((m) => m[1]),
      ['127'],
    );
    assert.match(
      html,
      /<td>60 · [^<]*<\/td><td class="mono">image2<\/td><td class="mono before">← node 127 output 0<\/td><td class="mono after">\(unwired\)/,
    );
    assert.match(html, /&quot;make it blue&quot;/);
    assert.equal(stored()['qwen-edit'], undefined);
  });

  test('CSRF: a save or a delete without the token or with a wrong one is 403 and changes nothing', async () => {
    const before = stored();
    const { fields } = await editorOf(await ui.get('/ui/mapping/sd15ui'));
    for (const csrf of ['', 'forged-token']) {
      const res = await ui.post('/ui/mapping', { ...fields, _csrf: [], action: 'save', alias: 'renamed' }, { csrf });
      assert.equal(res.status, 403, `save, token ${JSON.stringify(csrf)}`);
      const del = await ui.post('/ui/mapping/sd15ui/delete', {}, { csrf });
      assert.equal(del.status, 403, `delete, token ${JSON.stringify(csrf)}`);
      const reg = await ui.post('/ui/mapping', { ...fields, _csrf: [], action: 'compile' }, { csrf });
      assert.equal(reg.status, 403, `dry run, token ${JSON.stringify(csrf)}`);
    }
    assert.deepEqual(stored(), before);
    assert.ok(gw.gateway.generations.get('sd15ui'));
  });

  test('a node title shaped like a script tag renders as text', async () => {
    const wf = workflow('txt2img_sd15_api.json');
    wf['61']._meta = { title: '<script>alert(1)</script>' };
    const res = await register('xss', JSON.stringify(wf));
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.ok(!html.includes('<script>alert(1)</script>'));
    assert.match(html, /61 · &lt;script&gt;alert\(1\)&lt;\/script&gt; · PrimitiveStringMultiline/);
    assert.doesNotMatch(html, /\sstyle="/, 'no inline style');
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  });

  test('delete: the alias is gone from the catalog and the list', async () => {
    await ui.get('/ui/mapping/sd15ui');
    const res = await ui.post('/ui/mapping/sd15ui/delete', {});
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/ui/mapping?saved=deleted&name=sd15ui');
    assert.equal(gw.gateway.generations.get('sd15ui'), undefined);
    assert.match(await ui.html('/ui/mapping?saved=deleted&name=sd15ui'), /Deleted sd15ui/);
    assert.equal((await ui.get('/ui/mapping/sd15ui')).status, 404);
  });
});

describe('the mapping tab over aliases from config.yaml', () => {
  let gw: TestGateway;
  let a: ComfyFake;
  let ui: UiClient;
  before(async () => {
    a = await startComfyFake({ objectInfo: fakeObjectInfo() });
    gw = await startGateway([{ name: 'comfy-a', url: a.url, type: 'comfyui', ...FAST }], {
      api_key: MASTER,
      image_models: {
        sd15: [
          {
            backend: 'comfy-a',
            workflow: 'workflows/txt2img_sd15_api.json',
            workflow_json: workflow('txt2img_sd15_api.json'),
          },
        ],
        audio: [{ backend: 'comfy-a', workflow_json: workflow('stable_audio_open_api.json') }],
      },
    });
    ui = await UiClient.login(gw, MASTER);
  });
  after(async () => {
    await gw?.close();
    await a?.close();
  });

  test('the page says where the table comes from; a save stores it whole (overriding config.yaml), a reset goes back', async () => {
    const list = await ui.html('/ui/mapping');
    assert.match(list, /The alias table comes from config.yaml/);
    assert.match(list, /kind-audio/);
    const html = await ui.html('/ui/mapping/sd15');
    const fields = formFields(html, EDITOR);
    assert.equal(first(fields.original), 'sd15');
    // rename it and set a mode nobody asked for on a non-image field: refused inline by validateAlias
    const seed = mappingRows(fields).get('seed')!;
    const refused = await ui.post('/ui/mapping', {
      ...fields,
      _csrf: [],
      [`m${seed.k}_mode`]: 'required',
      action: 'save',
    });
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), new RegExp(`id="m${seed.k}-mode-error">[^<]*image slots only`));
    const res = await ui.post('/ui/mapping', { ...fields, _csrf: [], alias: 'sd15-renamed', action: 'save' });
    assert.equal(res.status, 303);
    const view = gw.gateway.admin.settingView('image_models')!;
    assert.deepEqual([view.source, view.overridden], ['store', true]);
    assert.deepEqual(
      Object.keys(gw.gateway.config().image_models).sort(),
      ['audio', 'sd15-renamed'],
      'the other alias kept, the old name gone',
    );
    assert.ok(gw.gateway.generations.get('sd15-renamed'));
    const after = await ui.html('/ui/mapping');
    assert.match(after, /overrides config.yaml/);
    assert.match(after, /config.yaml's sd15 is not in force/);
    await ui.get('/ui/mapping');
    const reset = await ui.post('/ui/mapping/reset', {});
    assert.equal(reset.status, 303);
    assert.deepEqual(Object.keys(gw.gateway.config().image_models).sort(), ['audio', 'sd15']);
  });
});
