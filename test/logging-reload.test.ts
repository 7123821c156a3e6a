/**
 * log_level is hot: a reload sets it on the logger fastify and the gateway share, so lines
 * below the old level appear (and disappear again) without a restart.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

test('a reload changes the log level of the running app', async (t) => {
  const fakes = await Promise.all(['a', 'b', 'c'].map(() => startFake('ollama', { models: ['m'] })));
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (c: Buffer) => {
    text += c.toString('utf8');
  });
  const gw = await startGateway(
    [{ name: 'a', url: fakes[0].url }],
    { log_level: 'error', health_check_interval: 300 },
    { logStream: stream },
  );
  t.after(async () => {
    await gw.close();
    await Promise.all(fakes.map((f) => f.close()));
  });
  const lines = () =>
    text
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: number; msg: string; backend?: string });
  const upLines = () =>
    lines()
      .filter((l) => l.msg === 'backend is up')
      .map((l) => l.backend);
  const config = () => gw.gateway.config();
  assert.equal(gw.gateway.registry.get('a')?.healthy, true);
  assert.deepEqual(upLines(), [], "error level: discovery's info lines are not written");

  // trace: the next backend that comes up is logged (the gateway's logger), and so are the
  // parser errors fastify reports through app.log, its child
  gw.gateway.reload({
    ...config(),
    log_level: 'trace',
    backends: [...config().backends, { ...config().backends[0], name: 'b', url: fakes[1].url }],
  });
  assert.equal(gw.app.log.level, 'trace');
  await waitFor(() => upLines().includes('b'), 'backend b logged as up');
  assert.ok(lines().some((l) => l.msg === 'log level is now trace'));
  await new Promise<void>((resolve) => {
    const socket = connect(gw.port, '127.0.0.1', () => socket.end('NOT HTTP AT ALL\r\n\r\n'));
    socket.on('data', () => {});
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
  });
  await waitFor(() => lines().some((l) => l.msg === 'client error'), "fastify's own trace line");

  // back to error: silent again
  gw.gateway.reload({
    ...config(),
    log_level: 'error',
    backends: [...config().backends, { ...config().backends[0], name: 'c', url: fakes[2].url }],
  });
  assert.equal(gw.app.log.level, 'error');
  await waitFor(() => gw.gateway.registry.get('c')?.healthy === true, 'c discovered');
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(upLines(), ['b']);
});
