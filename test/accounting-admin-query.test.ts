/**
 * The call-log admin API takes each query parameter once, as a plain string: repeated keys,
 * bracket objects and unknown keys are OpenAI-shaped 400s naming the key, never 500s.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startGateway } from './helpers/gateway.ts';

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

describe('admin call-log query parameters', () => {
  test('arrays, objects and unknown keys are 400 naming the key; good queries still work', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    const expect400 = async (path: string, param: string) => {
      const res = await fetch(`${gw.url}${path}`);
      assert.equal(res.status, 400, path);
      const body = (await res.json()) as ErrorBody;
      assert.equal(body.error.param, param, path);
      assert.equal(body.error.type, 'invalid_request_error', path);
      assert.equal(typeof body.error.message, 'string', path);
      assert.equal(typeof body.error.code, 'string', path);
      assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type'], path);
    };
    await expect400('/admin/api/calls?source=a&source=b', 'source');
    await expect400('/admin/api/calls?backend=a&backend=b', 'backend');
    await expect400('/admin/api/calls?model=a&model=b', 'model');
    await expect400('/admin/api/calls?limit=1&limit=2', 'limit');
    await expect400('/admin/api/calls?status=200&status=404', 'status');
    await expect400('/admin/api/calls?since[x]=1', 'since');
    await expect400('/admin/api/calls?since[]=1', 'since');
    await expect400('/admin/api/calls?sorce=typo', 'sorce');
    await expect400('/admin/api/stats?group=backend&group=model', 'group');
    await expect400('/admin/api/stats?since=1&since=2', 'since');
    await expect400('/admin/api/stats?until[gt]=1', 'until');
    await expect400('/admin/api/stats?group[x]=day', 'group');

    assert.equal((await fetch(`${gw.url}/admin/api/calls?source=a&limit=5&since=0`)).status, 200);
    assert.equal((await fetch(`${gw.url}/admin/api/calls`)).status, 200);
    assert.equal((await fetch(`${gw.url}/admin/api/stats?group=day&since=2026-01-01`)).status, 200);
  });
});
