/**
 * The console's backends tab over real sockets: a real gateway (a config.yaml backend, a
 * master key) and real fakes (LLM servers, one needing a key, a ComfyUI). Adding through the
 * form gets a backend discovered and listed; edits keep the write-only key; test connection is
 * a dry run (models, inventory, or a clear error); drain, disable, remove, reset; refused forms
 * keep what was typed, say why next to each field and save nothing; every form needs its CSRF
 * token; what backends report renders as text.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'ui-backends-master-key-0123456789';
const SECRET = 'sk-ui-backend-secret-5a4b3c2d1e-wxyz';
const XSS = '<script>alert(1)</script>';

let fileBox: FakeBackend;
let open: FakeBackend;
let keyed: FakeBackend;
let comfy: ComfyFake;
let gw: TestGateway;
let ui: UiClient;

before(async () => {
  fileBox = await startFake('llamacpp', { models: ['m'], knobs: { chunkCount: 20, tokensPerSecond: 40 } });
  open = await startFake('vllm', { models: [XSS, 'open-model'] });
  keyed = await startFake('vllm', { models: ['m', 'keyed-model'], apiKey: SECRET });
  comfy = await startComfyFake();
  gw = await startGateway([{ name: 'filebox', url: fileBox.url }], { api_key: MASTER, health_check_interval: 300 });
  ui = await UiClient.login(gw, MASTER);
});
after(async () => {
  await gw.close();
  await Promise.all([fileBox.close(), open.close(), keyed.close(), comfy.close()]);
});

/** The fields of a fresh backend form (what the browser posts with the defaults). */
const form = (fields: Record<string, string>) => ({ type: 'openai', enabled: 'on', ...fields });

const chat = (model: string, stream = false) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });

/** Follows a 303 and returns the page it leads to. */
async function follow(res: Response): Promise<string> {
  assert.equal(res.status, 303, `expected a redirect, got ${res.status}: ${(await res.text()).slice(0, 400)}`);
  return ui.html(res.headers.get('location')!);
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** UiClient's cookies, for a fetch it does not make itself (a header token instead of a form field). */
const cookieOf = (client: UiClient) => (client as unknown as { cookieHeader(): string }).cookieHeader();

/** `<p class="error" id="<field>-error">…` of a refused page, by field. */
function fieldErrors(html: string): Record<string, string> {
  return Object.fromEntries(
    [...html.matchAll(/<p class="error" id="([\w-]+)-error">([^<]*)<\/p>/g)].map((m) => [m[1], m[2]]),
  );
}

describe('backends tab: add, list, edit', () => {
  test('the list shows the config.yaml backend with its state, source, models and load', async () => {
    const html = await ui.html('/ui/backends');
    assert.match(html, /<th scope="col">State<\/th>/);
    assert.match(html, /href="\/ui\/backends\/filebox\/edit">filebox</);
    assert.match(html, /data-part="state:filebox"><span class="status up">/);
    assert.match(html, /<span class="tag src-file">config\.yaml<\/span>/);
    assert.match(html, /<strong>0<\/strong> \/ no cap/);
  });

  test('adding a backend pointing at a fake: discovered, listed, its key masked everywhere', async () => {
    await ui.html('/ui/backends/new');
    const res = await ui.post(
      '/ui/backends',
      form({ name: 'cloud', url: keyed.url, api_key: SECRET, paid: 'on', max_concurrent: '2', models: '' }),
    );
    const page = await follow(res);
    assert.match(page, /Added cloud/);
    await waitFor(() => gw.gateway.registry.get('cloud')?.healthy === true, 'cloud discovered with its key');
    const list = await ui.html('/ui/backends');
    assert.match(list, /href="\/ui\/backends\/cloud\/edit">cloud</);
    assert.match(list, /<span class="tag src-store">store<\/span>/);
    assert.match(list, /<span class="tag paid">paid<\/span>/);
    assert.match(list, /<strong>0<\/strong> \/ 2/);
    assert.ok(!list.includes(SECRET));
    const edit = await ui.html('/ui/backends/cloud/edit');
    assert.ok(!edit.includes(SECRET), 'the key is never in the page');
    assert.match(edit, /set \(sk-…wxyz\)/);
    assert.match(edit, /<input type="password" id="api_key" name="api_key" value=""/);
    assert.equal(gw.gateway.storedBackends.get('cloud')?.api_key, SECRET);
  });

  test('editing with a blank key keeps it; "clear" removes it; a new key sets it again', async () => {
    await ui.html('/ui/backends/cloud/edit');
    const kept = await ui.post(
      '/ui/backends/cloud/edit',
      form({ name: 'cloud', url: keyed.url, api_key: '', paid: 'on', max_concurrent: '3' }),
    );
    assert.match(await follow(kept), /Saved cloud/);
    assert.equal(gw.gateway.storedBackends.get('cloud')?.api_key, SECRET, 'kept');
    assert.equal(gw.gateway.storedBackends.get('cloud')?.max_concurrent, 3);
    await waitFor(() => gw.gateway.registry.get('cloud')?.healthy === true, 'still up with the kept key');

    const cleared = await ui.post(
      '/ui/backends/cloud/edit',
      form({ name: 'cloud', url: keyed.url, api_key_clear: 'on', paid: 'on' }),
    );
    await follow(cleared);
    assert.equal(gw.gateway.storedBackends.get('cloud')?.api_key, undefined);
    await waitFor(() => gw.gateway.registry.get('cloud')?.error?.kind === 'auth', 'down without its key');
    assert.match(await ui.html('/ui/backends'), /<strong>auth<\/strong> 401 since/);

    await follow(
      await ui.post('/ui/backends/cloud/edit', form({ name: 'cloud', url: keyed.url, api_key: SECRET, paid: 'on' })),
    );
    await waitFor(() => gw.gateway.registry.get('cloud')?.healthy === true, 'up again with the new key');
  });

  test('every option of a comfyui backend, decimal comma accepted; knobs of another kind refused at their field', async () => {
    const res = await ui.post(
      '/ui/backends',
      form({
        type: 'comfyui',
        name: 'comfy',
        url: comfy.url,
        max_concurrent: '1',
        gpu_group: 'gpu1',
        host: 'gpu1',
        stuck_after_s: '45',
        poll_interval: '0,5',
        max_wait: '900',
        read_timeout: '30',
        disconnect_grace: '10',
        auto_restart: 'on',
        restart_cooldown_s: '300',
      }),
    );
    await follow(res);
    const spec = gw.gateway.storedBackends.get('comfy')!;
    assert.deepEqual(
      {
        type: spec.type,
        poll_interval: spec.poll_interval,
        stuck_after_s: spec.stuck_after_s,
        max_wait: spec.max_wait,
        auto_restart: spec.auto_restart,
        gpu_group: spec.gpu_group,
        restart_cooldown_s: spec.restart_cooldown_s,
      },
      {
        type: 'comfyui',
        poll_interval: 0.5,
        stuck_after_s: 45,
        max_wait: 900,
        auto_restart: true,
        gpu_group: 'gpu1',
        restart_cooldown_s: 300,
      },
    );
    await waitFor(() => gw.gateway.registry.get('comfy')?.healthy === true, 'the ComfyUI box up');

    const wrongKind = await ui.post(
      '/ui/backends',
      form({ name: 'llm2', url: open.url, stuck_after_s: '5', auth_mode: 'subscription', prompt_cache: 'on' }),
    );
    assert.equal(wrongKind.status, 400);
    const errors = fieldErrors(await wrongKind.text());
    assert.match(errors.stuck_after_s, /only backends of type comfyui/);
    assert.match(errors.auth_mode, /only backends of type anthropic/);
    assert.equal(gw.gateway.storedBackends.get('llm2'), undefined);
  });

  test('the edit form marks each field with the kinds that read it and renders every option', async () => {
    const html = await ui.html('/ui/backends/comfy/edit');
    for (const key of [
      'name',
      'url',
      'type',
      'enabled',
      'api_key',
      'max_concurrent',
      'paid',
      'local',
      'chat_only',
      'serverless_only',
      'host',
      'auth_mode',
      'models',
      'prompt_cache',
      'responses',
      'sampling_defaults',
      'reasoning_as_content',
      'gpu_group',
      'stuck_after_s',
      'poll_interval',
      'max_wait',
      'read_timeout',
      'disconnect_grace',
      'auto_restart',
      'restart_cooldown_s',
    ]) {
      assert.match(html, new RegExp(`id="${key}" name="${key}"`), key);
      assert.match(html, new RegExp(`<label[^>]*for="${key}"`), `${key} has a label`);
    }
    assert.match(html, /data-types="comfyui" id="f-poll_interval"/);
    assert.match(html, /data-types="anthropic" id="f-auth_mode"/);
    assert.match(html, /id="poll_interval" name="poll_interval" value="0\.5"/);
    assert.match(html, /<option value="comfyui" selected>/);
    assert.match(html, /<script src="\/ui\/assets\/backends\.js" defer><\/script>/);
  });

  test('a model id shaped like a script tag renders as text in the list and in a test result', async () => {
    await follow(await ui.post('/ui/backends', form({ name: 'openbox', url: open.url, local: 'on' })));
    await waitFor(() => gw.gateway.registry.get('openbox')?.healthy === true, 'openbox up');
    const list = await ui.html('/ui/backends');
    assert.ok(!list.includes(XSS));
    assert.ok(list.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    const tested = await ui.post('/ui/backends/test?part=1', form({ name: 'x', url: open.url }));
    const fragment = await tested.text();
    assert.ok(!fragment.includes(XSS));
    assert.ok(fragment.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  });
});

describe('backends tab: test connection', () => {
  test("lists the fake's models without saving anything; the fetch sends the token as a header", async () => {
    await ui.html('/ui/backends/new');
    const res = await fetch(`${gw.url}/ui/backends/test?part=1`, {
      method: 'POST',
      headers: { cookie: cookieOf(ui), 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': ui.csrf },
      body: new URLSearchParams(form({ name: 'probe', url: fileBox.url })),
    });
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /connected/);
    assert.match(html, /Discovery would list <strong>1<\/strong> model:/);
    assert.match(html, /<li>m<\/li>/);
    assert.equal(gw.gateway.registry.get('probe'), undefined, 'nothing registered');
    assert.equal(gw.gateway.storedBackends.get('probe'), undefined, 'nothing stored');
  });

  test('on the edit page a blank key tests with the stored one; ComfyUI shows its inventory', async () => {
    const withKey = await (
      await ui.post('/ui/backends/test?part=1', form({ _replace: 'cloud', name: 'cloud', url: keyed.url }))
    ).text();
    assert.match(withKey, /<li>keyed-model<\/li>/);
    const inv = await (
      await ui.post('/ui/backends/test?part=1', form({ type: 'comfyui', name: 'c2', url: comfy.url }))
    ).text();
    assert.match(inv, /ComfyUI inventory/);
    assert.match(inv, /<dt>checkpoints<\/dt><dd>\d+<\/dd>/);
  });

  test('a closed port fails clearly; an invalid form names its problems; without script the whole page answers', async () => {
    const port = await closedPort();
    const closed = await (
      await ui.post('/ui/backends/test?part=1', form({ name: 'gone', url: `http://127.0.0.1:${port}` }))
    ).text();
    assert.match(closed, /failed/);
    assert.match(closed, /unreachable/);
    assert.match(closed, new RegExp(`127\\.0\\.0\\.1:${port}: cannot connect`));
    const invalid = await (await ui.post('/ui/backends/test?part=1', form({ name: 'bad name', url: 'nope' }))).text();
    assert.match(invalid, /The form is not valid yet/);
    assert.match(invalid, /href="#url"/);

    const page = await ui.post(
      '/ui/backends/test',
      form({ name: 'nojs', url: fileBox.url, api_key: 'sk-typed-0000000000000000' }),
    );
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /<h1>New backend<\/h1>/);
    assert.match(html, /id="url" name="url" value="http:\/\/127\.0\.0\.1:\d+"/, 'the form keeps what was typed');
    assert.match(html, /<li>m<\/li>/);
    assert.ok(!html.includes('sk-typed-0000000000000000'), 'a typed key is never sent back');
    assert.match(fieldErrors(html).api_key, /Type the key again/);
    assert.equal(gw.gateway.storedBackends.get('nojs'), undefined);
  });
});

describe('backends tab: refused forms', () => {
  test('problems inline next to their fields, the values kept, nothing saved', async () => {
    const before = gw.gateway.storedBackends.list().length;
    const res = await ui.post(
      '/ui/backends',
      form({
        name: 'bad name',
        url: 'ftp://box',
        max_concurrent: '1,5',
        sampling_defaults: '{"temperature": ',
        host: 'gpu<b>1</b>',
        api_key: 'sk-typed-1111111111111111',
      }),
    );
    assert.equal(res.status, 400);
    const html = await res.text();
    const errors = fieldErrors(html);
    assert.match(errors.name, /letters, digits/);
    assert.match(errors.url, /http:\/\/ or https:\/\//);
    assert.match(errors.max_concurrent, /must be an integer, got number 1\.5/);
    assert.match(errors.sampling_defaults, /not valid JSON/);
    assert.match(errors.api_key, /Type the key again/);
    assert.match(html, /id="url" name="url" value="ftp:\/\/box"/);
    assert.match(html, /id="max_concurrent" name="max_concurrent" value="1,5"/);
    assert.match(html, /value="gpu&lt;b&gt;1&lt;\/b&gt;"/);
    assert.match(
      html,
      /id="name" name="name" value="bad name"[^>]*aria-describedby="name-error name-hint" aria-invalid="true"/,
    );
    assert.match(html, /Nothing was saved: 5 problems/);
    assert.ok(!html.includes('sk-typed-1111111111111111'));
    assert.equal(gw.gateway.storedBackends.list().length, before);
  });

  test('a name already in the fleet, an edit moving the key to a new address', async () => {
    const dup = await ui.post('/ui/backends', form({ name: 'filebox', url: open.url }));
    assert.equal(dup.status, 400);
    assert.match(fieldErrors(await dup.text()).name, /already exists/);
    const moved = await ui.post(
      '/ui/backends/cloud/edit',
      form({ name: 'cloud', url: 'http://127.0.0.1:9', paid: 'on' }),
    );
    assert.equal(moved.status, 400);
    assert.match(fieldErrors(await moved.text()).api_key, /enter the key again/);
    assert.equal(gw.gateway.storedBackends.get('cloud')?.url, keyed.url, 'nothing written');
    assert.equal((await ui.get('/ui/backends/nosuch/edit')).status, 404);
  });
});

describe('backends tab: the service checks, nothing probes', () => {
  test('a form that cannot be read shows every other problem too (name taken, URL) from the service; nothing is probed or saved', async () => {
    const seen = open.requests.length;
    const before = gw.gateway.storedBackends.list().length;
    const res = await ui.post(
      '/ui/backends',
      form({ name: 'filebox', url: 'nope', sampling_defaults: '{"temperature": ' }),
    );
    assert.equal(res.status, 400);
    const errors = fieldErrors(await res.text());
    assert.match(errors.sampling_defaults, /not valid JSON/);
    assert.match(errors.name, /already exists/);
    assert.match(errors.url, /is not a URL/);
    const tested = await (
      await ui.post(
        '/ui/backends/test?part=1',
        form({ name: 'filebox2', url: open.url, sampling_defaults: '{', max_concurrent: 'x' }),
      )
    ).text();
    assert.match(tested, /The form is not valid yet/);
    assert.match(tested, /href="#sampling_defaults"/);
    assert.match(tested, /href="#max_concurrent"/, "the service's problems of the other fields as well");
    assert.equal(open.requests.length, seen, 'a form that cannot be read is never probed');
    assert.equal(gw.gateway.storedBackends.list().length, before);
  });

  test('checkBackend: every problem of an input, nothing saved or probed; none for one saveBackend would take', async () => {
    const seen = open.requests.length;
    const admin = gw.gateway.admin;
    const problems = admin.checkBackend({ name: 'filebox', url: 'nope', max_concurrent: -1 }, { create: true });
    assert.deepEqual(problems.map((p) => p.path).sort(), ['max_concurrent', 'name', 'url']);
    assert.deepEqual(admin.checkBackend({ name: 'fresh', url: open.url }, { create: true }), []);
    assert.deepEqual(
      admin.checkBackend({ name: 'fresh', url: open.url }, { replace: 'nosuch' }).map((p) => p.message),
      ['no backend named "nosuch"'],
    );
    assert.equal(admin.backendView('fresh'), undefined, 'nothing saved');
    assert.equal(open.requests.length, seen, 'nothing probed');
  });
});

describe('backends tab: drain, disable, remove, reset', () => {
  test('drain: the in-flight call finishes (and is shown finishing), nothing new; resume', async () => {
    const stream = await chat('filebox/m', true);
    assert.equal(stream.status, 200);
    await ui.html('/ui/backends');
    const page = await follow(await ui.post('/ui/backends/filebox/drain', { on: '1' }));
    assert.match(page, /filebox is draining/);
    assert.match(page, /1 in flight finishing/);
    assert.equal(gw.gateway.registry.get('filebox')?.draining, true);
    assert.equal((await chat('filebox/m')).status, 503, 'no new work');
    assert.match(await stream.text(), /data: \[DONE\]/, 'the in-flight stream ran to its end');
    await waitFor(async () => /drained: nothing in flight/.test(await ui.html('/ui/backends')), 'shown drained');
    await follow(await ui.post('/ui/backends/filebox/drain', { on: '0' }));
    assert.equal(gw.gateway.registry.get('filebox')?.draining, false);
    assert.equal((await chat('filebox/m')).status, 200);
  });

  test('disabling a config.yaml backend is a store override; the list says so; reset brings config.yaml back', async () => {
    const page = await follow(await ui.post('/ui/backends/filebox/enabled', { enabled: '0' }));
    assert.match(page, /filebox is disabled/);
    assert.equal(gw.gateway.config().backends.find((b) => b.name === 'filebox')?.enabled, false);
    assert.match(
      page,
      /<span class="tag src-both">store<\/span>\s*<span class="bk-src-note">overrides config\.yaml: <span class="mono">enabled<\/span>/,
    );
    assert.match(page, /action="\/ui\/backends\/filebox\/reset"/);
    const back = await follow(await ui.post('/ui/backends/filebox/reset', {}));
    assert.match(back, /filebox is back to its config\.yaml entry/);
    assert.equal(gw.gateway.storedBackends.get('filebox'), undefined);
    await waitFor(() => gw.gateway.registry.get('filebox')?.healthy === true, 'filebox back up');
  });

  test("removing: a store backend is deleted; a config.yaml one is disabled, with the service's note", async () => {
    await follow(await ui.post('/ui/backends', form({ name: 'temp', url: open.url })));
    const gone = await follow(await ui.post('/ui/backends/temp/remove', {}));
    assert.match(gone, /Removed temp/);
    assert.equal(gw.gateway.admin.backendView('temp'), undefined);
    assert.ok(!gone.includes('href="/ui/backends/temp/edit"'));

    const kept = await follow(await ui.post('/ui/backends/filebox/remove', {}));
    assert.match(kept, /comes from config\.yaml: it is disabled with a store override/);
    assert.equal(gw.gateway.admin.backendView('filebox')?.enabled, false);
    await follow(await ui.post('/ui/backends/filebox/reset', {}));
    assert.equal(gw.gateway.admin.backendView('filebox')?.enabled, true);
  });

  test('the list stays live: the event stream sends each row as rendered parts', async () => {
    const res = await ui.get('/ui/backends/events');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('load:filebox')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    assert.match(text, /event: part\ndata: \{"name":"state:filebox","html":/);
  });
});

describe('backends tab: CSRF', () => {
  test('every form without its token or with a wrong one: 403, nothing changed', async () => {
    await ui.html('/ui/backends');
    const before = JSON.stringify(gw.gateway.storedBackends.list());
    const forms: [string, Record<string, string>][] = [
      ['/ui/backends', form({ name: 'sneaky', url: open.url })],
      ['/ui/backends/cloud/edit', form({ name: 'cloud', url: keyed.url, max_concurrent: '9' })],
      ['/ui/backends/test?part=1', form({ name: 'sneaky', url: open.url })],
      ['/ui/backends/filebox/enabled', { enabled: '0' }],
      ['/ui/backends/filebox/drain', { on: '1' }],
      ['/ui/backends/cloud/remove', {}],
      ['/ui/backends/cloud/reset', {}],
    ];
    for (const [path, fields] of forms) {
      for (const csrf of ['', 'forged-token']) {
        const res = await ui.post(path, fields, { csrf });
        assert.equal(res.status, 403, `${path} with token ${JSON.stringify(csrf)}`);
      }
    }
    assert.equal(JSON.stringify(gw.gateway.storedBackends.list()), before, 'the store is unchanged');
    assert.equal(gw.gateway.registry.get('filebox')?.draining, false);
    assert.equal(gw.gateway.admin.backendView('sneaky'), undefined);
  });
});
