/**
 * Names from the request (route parameters, notices in the query, posted choices) shaped like
 * Object.prototype's keys — `__proto__`, `constructor`, `toString` — on every tab over real
 * HTTP: each is an ordinary "no such thing" (a 404 page, or the page without a notice), never
 * a 500, and never the prototype's function called as ours.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'ui-route-params-master-0123456789';
const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];

describe('prototype-shaped names from the request', () => {
  let gw: TestGateway;
  let fake: FakeBackend;
  let ui: UiClient;
  before(async () => {
    fake = await startFake('vllm', { models: ['m'] });
    gw = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER, virtual_models: { fast: 'm' } });
    ui = await UiClient.login(gw, MASTER);
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  test('route parameters: a 404 page on every tab', async () => {
    for (const name of NAMES) {
      for (const path of [
        `/ui/mapping/${name}`,
        `/ui/backends/${name}/edit`,
        `/ui/users/${name}`,
        `/ui/jobs/${name}`,
        `/ui/calls/${name}`,
      ]) {
        const res = await ui.get(path);
        assert.equal(res.status, 404, path);
        assert.match(res.headers.get('content-type') ?? '', /text\/html/, path);
      }
      const edit = await ui.get(`/ui/aliases/edit?name=${name}`);
      assert.equal(edit.status, 404, `alias ${name}`);
      await ui.get('/ui/backends');
      for (const path of [
        `/ui/mapping/${name}/delete`,
        `/ui/backends/${name}/remove`,
        `/ui/backends/${name}/drain`,
        `/ui/server/${name}`,
        `/ui/users/${name}/delete`,
      ]) {
        const res = await ui.post(path, { on: '1', value: '1' });
        assert.equal(res.status, 404, `POST ${path}`);
      }
    }
  });

  test('notices named in the query: the page, without a notice', async () => {
    for (const name of NAMES) {
      for (const path of [
        `/ui/aliases?saved=${name}&name=x`,
        `/ui/users?saved=${name}&name=x`,
        `/ui/reasoning?saved=${name}&n=1`,
        `/ui/backends?done=${name}&name=box`,
        `/ui/server?done=${name}&key=${name}`,
        `/ui/mapping?saved=${name}`,
      ]) {
        const res = await ui.get(path);
        assert.equal(res.status, 200, path);
        assert.doesNotMatch(await res.text(), /class="notice"/, `${path}: no notice`);
      }
    }
  });

  test('posted choices: refused or ignored, never a 500', async () => {
    for (const name of NAMES) {
      await ui.get('/ui/reasoning/new');
      const rule = await ui.post('/ui/reasoning/save', {
        i: '',
        v: '',
        position: '',
        model: 'x*',
        mechanism: name,
        params: '',
      });
      assert.ok(rule.status < 500, `reasoning mechanism ${name}: ${rule.status}`);
      await ui.get('/ui/backends/new');
      const backend = await ui.post('/ui/backends', {
        name: `b-${name.replace(/_/g, '')}`,
        url: 'http://127.0.0.1:1',
        type: name,
      });
      assert.ok(backend.status < 500, `backend type ${name}: ${backend.status}`);
      await ui.get('/ui/aliases/reset');
      const reset = await ui.post('/ui/aliases/reset', { key: name });
      assert.equal(reset.status, 400, `alias reset ${name}`);
      const alias = await ui.post('/ui/aliases/save', {
        original: '',
        name,
        mode: 'single',
        single: 'm',
        reasoning: name,
      });
      assert.ok(alias.status < 500, `alias ${name}: ${alias.status}`);
      if (name === '__proto__') {
        assert.equal(alias.status, 400, 'refused, not "saved" while nothing is stored');
        assert.match(await alias.text(), /cannot be the key of a table/);
      }
    }
  });
});
