/**
 * A media refusal says why too: a generation whose every ComfyUI box is out is refused at
 * submit with each box's reason in the message and `error.candidates`, on the Images API (the
 * real `openai` SDK) and the native API; names for admins, none for a plain user.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { call, createUser, MASTER, startMediaRig, type MediaRig } from './helpers/media-gateway.ts';

describe("a media refusal names each box's reason", () => {
  let rig: MediaRig;
  let userKey: string;

  before(async () => {
    rig = await startMediaRig();
    userKey = await createUser(rig.url, 'painter');
    rig.comfy.setKnobs({ refuse: true });
    await rig.gw.gateway.discovery.pollAll();
    assert.equal(rig.gw.gateway.registry.get('comfy')?.healthy, false);
  });
  after(async () => rig?.close());

  const generate = async (key: string) => {
    const client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: key, maxRetries: 0 });
    const err = await client.images.generate({ model: 'sd15', prompt: 'a lighthouse' }).then(
      () => assert.fail('generated'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.APIError, String(err));
    return err;
  };

  test('the Images API: a 503 naming the unreachable box, for the master key', async () => {
    const err = await generate(MASTER);
    assert.equal(err.status, 503);
    const error = err.error as { code: string; message: string; candidates?: any[] };
    assert.equal(error.code, 'no_backend');
    assert.match(error.message, /^`comfy` is out: the gateway could not reach it \d+ s ago\.$/);
    assert.deepEqual(
      error.candidates?.map((c) => [c.backend, c.reason]),
      [['comfy', 'unreachable']],
    );
  });

  test('a plain user gets the reason without the name', async () => {
    const error = (await generate(userKey)).error as { message: string; candidates?: any[] };
    assert.match(error.message, /^The backend serving `sd15` is out: the gateway could not reach it/);
    assert.deepEqual(
      error.candidates?.map((c) => Object.keys(c).sort()),
      [['reason', 'since_s']],
    );
  });

  test('the native API refuses the same way', async () => {
    const body = { model: 'sd15', prompt: 'a lighthouse' };
    type Refused = { error: { code: string; candidates?: any[] } };
    const res = await call<Refused>(rig.url, 'POST', '/v1/generations', MASTER, body);
    assert.equal(res.status, 503);
    assert.deepEqual(
      res.body.error.candidates?.map((c) => c.reason),
      ['unreachable'],
    );
  });
});

describe('a media job that waits past media_park_timeout_s says why', () => {
  let rig: MediaRig;
  before(async () => {
    rig = await startMediaRig({ knobs: { stepMs: 400, steps: 4 }, overrides: { media_park_timeout_s: 0.5 } });
  });
  after(async () => rig?.close());

  test('the Images API: a 503 saying the box stayed busy for the whole wait, with how many ahead', async () => {
    const first = await call<{ job_id: string }>(rig.url, 'POST', '/v1/generations', MASTER, {
      model: 'sd15',
      prompt: 'the long one',
      mode: 'async',
    });
    assert.equal(first.status, 202);
    const client = new OpenAI({ baseURL: `${rig.url}/v1`, apiKey: MASTER, maxRetries: 0 });
    const err = await client.images.generate({ model: 'sd15', prompt: 'the short wait' }).then(
      () => assert.fail('generated'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 503);
    const error = err.error as { code: string; message: string };
    assert.equal(error.code, 'park_timeout');
    assert.match(error.message, /: `comfy` stayed busy for the whole 0\.5 s wait, with no call ahead\./);
  });
});
