/**
 * What start-up says: the command line (help, version, one-line mistakes), where the console
 * and the API are, and which backends answered the first discovery round (a real gateway and
 * fake backends over sockets).
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { parseCommandLine, USAGE } from '../src/cli.ts';
import { noConfigFileMessage } from '../src/config/load.ts';
import { baseUrl, fleetLines, whereLine } from '../src/startup-report.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

describe('the command line', () => {
  test('flags become run options; --help / -h and --version / -v win', () => {
    assert.deepEqual(parseCommandLine(['--config', 'a.yaml', '--port', '0', '--host', '::1']), {
      kind: 'run',
      options: { config: 'a.yaml', port: '0', host: '::1' },
    });
    assert.deepEqual(parseCommandLine([]), { kind: 'run', options: {} });
    for (const argv of [['--help'], ['-h'], ['--port', '1', '--help']]) {
      assert.deepEqual(parseCommandLine(argv), { kind: 'help' }, argv.join(' '));
    }
    for (const argv of [['--version'], ['-v']]) {
      assert.deepEqual(parseCommandLine(argv), { kind: 'version' }, argv.join(' '));
    }
  });

  test('a mistake is one line naming it, never a stack', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--bogus'], /^Unknown option '--bogus'$/],
      [['-z'], /^Unknown option '-z'$/],
      [['--port'], /^Option '--port <value>' argument missing$/],
      [['serve'], /^Unexpected argument 'serve'/],
      [['--help=yes'], /^Option '-h, --help' does not take an argument$/],
    ];
    for (const [argv, expected] of cases) {
      const command = parseCommandLine(argv);
      assert.equal(command.kind, 'error', argv.join(' '));
      if (command.kind !== 'error') continue;
      assert.match(command.message, expected);
      assert.ok(!command.message.includes('\n'), 'one line');
    }
  });

  test('the help lists every flag', () => {
    const flags = ['--config <file>', '--port <n>', '--host <addr>', '--help', '--version'];
    flags.push('LLM_GATEWAY_CONFIG', 'PORT', 'HOST');
    for (const flag of flags) {
      assert.ok(USAGE.includes(flag), flag);
    }
  });
});

describe('where things are', () => {
  test('console and API URLs for the bound address; a wildcard means localhost, IPv6 in brackets', () => {
    assert.equal(
      whereLine('127.0.0.1', 4000),
      'console http://127.0.0.1:4000/ui · API http://127.0.0.1:4000/v1' +
        ' (Anthropic clients: base URL http://127.0.0.1:4000)',
    );
    assert.equal(baseUrl('0.0.0.0', 4000), 'http://localhost:4000');
    assert.equal(baseUrl('::', 8080), 'http://localhost:8080');
    assert.equal(baseUrl('::1', 4000), 'http://[::1]:4000');
    assert.equal(baseUrl('gpu-box.lan', 4000), 'http://gpu-box.lan:4000');
  });

  test('no config file: one sentence, said once', () => {
    const message = noConfigFileMessage('/srv/gw/config.yaml');
    assert.match(message, /^no config file at \/srv\/gw\/config\.yaml: running on built-in defaults/);
    const count = (re: RegExp) => message.match(re)?.length ?? 0;
    const counts = [count(/no config/gi), count(/built-in defaults/g), count(/embedded default/g)];
    assert.deepEqual(counts, [1, 1, 0], message);
    assert.match(message, /copy config\.example\.yaml to config\.yaml/);
  });
});

describe('which backends answered the first discovery round', () => {
  let llama: FakeBackend;
  let ollama: FakeBackend;
  let comfy: ComfyFake;
  let gw: TestGateway;
  before(async () => {
    llama = await startFake('llamacpp', { models: ['qwen3-8b'] });
    ollama = await startFake('ollama', { models: ['llama3.2:3b', 'nomic-embed-text'] });
    comfy = await startComfyFake();
    gw = await startGateway([
      { name: 'gpu-box', url: llama.url },
      { name: 'ollama', url: ollama.url },
      { name: 'gone', url: 'http://127.0.0.1:9/v1' },
      { name: 'spare', url: 'http://127.0.0.1:9/v1', enabled: false },
      { name: 'comfy', url: comfy.url, type: 'comfyui' },
    ]);
  });
  after(async () => {
    await gw?.close();
    await Promise.all([llama?.close(), ollama?.close(), comfy?.close()]);
  });

  test('a heading with the count, then one aligned line per backend: up with models, down with why, off', async () => {
    const lines = fleetLines(gw.gateway.health);
    assert.equal(lines[0], 'backends: 3 of 4 answered');
    assert.equal(lines.length, 6);
    const line = (name: string) =>
      lines.find((l) => l.split(/\s+/)[2] === name) ?? assert.fail(`no line for ${name}:\n${lines.join('\n')}`);
    assert.equal(line('gpu-box'), '  up   gpu-box  1 model');
    assert.equal(line('ollama'), '  up   ollama   2 models');
    const gone = '  down gone     unreachable: connect ECONNREFUSED 127.0.0.1:9';
    assert.equal(line('gone'), gone, 'the error code said once');
    assert.equal(line('spare'), '  off  spare    disabled');
    assert.match(line('comfy'), /^ {2}up {3}comfy {4}ComfyUI, \d+ model files?, \d+ LoRAs?$/);
  });

  test('no backends at all says where to add them', () => {
    assert.deepEqual(fleetLines({ backends: () => [], mediaInventory: () => undefined }), [
      'no backends configured: add some to config.yaml or in the console (/ui/backends)',
    ]);
  });
});

describe('an empty machine on the embedded default: the guesses nobody answers are no news', () => {
  /** A gateway logging at debug into `lines` (pino JSON, one object a line). */
  async function gatewayLogging(backends: Array<{ name: string; url: string }>, configSource: string) {
    const lines: Array<{ level: number; msg: string; backend?: string }> = [];
    const logStream = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    const gw = await startGateway(backends, { log_level: 'debug' }, { logStream, configSource });
    const down = (level: number) =>
      lines.filter((l) => l.level === level && l.msg.startsWith('backend is down')).map((l) => l.backend);
    return { gw, warned: () => down(40), debugged: () => down(20) };
  }

  test('a loopback guess that never answered is logged at debug; one that answered and went away warns', async () => {
    const box = await startFake('ollama');
    const { gw, warned, debugged } = await gatewayLogging(
      [
        { name: 'llamacpp', url: 'http://127.0.0.1:9' },
        { name: 'ollama', url: box.url },
      ],
      'embedded default',
    );
    try {
      assert.deepEqual(warned(), [], 'no warning for a port nobody listens on');
      assert.deepEqual(debugged(), ['llamacpp']);
      assert.match(fleetLines(gw.gateway.health).join('\n'), /down llamacpp/, 'the summary still lists it');
      await box.close();
      await gw.gateway.discovery.pollAll();
      assert.deepEqual(warned(), ['ollama'], 'a guess that answered once and went away is news');
    } finally {
      await gw.close();
      await box.close();
    }
  });

  test('a backend in a config file warns when it is down from the first round', async () => {
    const { gw, warned, debugged } = await gatewayLogging(
      [{ name: 'llamacpp', url: 'http://127.0.0.1:9' }],
      '/srv/gw/config.yaml',
    );
    try {
      assert.deepEqual(warned(), ['llamacpp']);
      assert.deepEqual(debugged(), []);
    } finally {
      await gw.close();
    }
  });
});
