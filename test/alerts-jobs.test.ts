/**
 * `job_failed` over sockets: media jobs failing on a fake ComfyUI box (an execution error)
 * raise one alert per alias per interval, naming the alias, the box and the error; a job that
 * succeeds raises none.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { bodyOf, startAlertSink, type AlertSink } from './helpers/alert-sink.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { FAST_COMFY, sd15Models, settle, submitText } from './helpers/media-service.ts';

let sink: AlertSink;
let comfy: ComfyFake;
let gw: TestGateway;

before(async () => {
  sink = await startAlertSink();
  comfy = await startComfyFake({});
  gw = await startGateway([{ name: 'comfy-0', url: comfy.url, type: 'comfyui', ...FAST_COMFY }], {
    image_models: sd15Models(['comfy-0']),
    alerts: [{ url: `${sink.url}/jobs`, format: 'json', min_interval_s: 300, events: ['job_failed'] }],
  });
});
after(async () => {
  await gw.close();
  await comfy.close();
  await sink.close();
});

describe('job_failed', () => {
  test('a job that succeeds raises nothing', async () => {
    const done = await settle(gw, (await submitText(gw, 'sd15')).id);
    assert.equal(done.status, 'done', JSON.stringify(done.error));
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(sink.received, []);
  });

  test('failing jobs: one alert for the alias within the interval, naming the box and the error', async () => {
    comfy.setKnobs({ failNode: '310' });
    for (let i = 0; i < 3; i++) {
      const failed = await settle(gw, (await submitText(gw, 'sd15')).id);
      assert.equal(failed.status, 'failed');
    }
    const [alert] = await sink.waitFor(1, '/jobs');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(sink.received.length, 1, 'three failures, one alert');
    const body = bodyOf(alert);
    assert.equal(body.event, 'job_failed');
    assert.equal(body.alias, 'sd15');
    assert.equal(body.backend, 'comfy-0');
    assert.equal(body.detail, 'a job of sd15 failed on comfy-0: execution_error');
  });
});
