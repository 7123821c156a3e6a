/** The wake and idle_sleep keys of a backend: accepted shapes, and each mistake named by its key path. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isBroadcastAddress, magicPacket } from '../src/backends/wake/packet.ts';
import { createConfigValidator, validateConfig } from '../src/config/schema.ts';

const backend = (extra: Record<string, unknown>) => ({
  backends: [{ name: 'box', url: 'http://10.0.0.5:8080', ...extra }],
});
const paths = (raw: unknown) => {
  const result = validateConfig(raw);
  return result.ok ? [] : result.problems.map((p) => p.path);
};

test('accepted: a MAC with colons or dashes, an IPv4, IPv6 or host name address, idle_sleep with wake', () => {
  for (const wake of [
    { mac: 'aa:bb:cc:dd:ee:ff' },
    { mac: 'AA-BB-CC-DD-EE-FF', address: '192.168.1.255', port: 7, boot_timeout_s: 90, cooldown_s: 0 },
    { mac: '00:11:22:33:44:55', address: 'ff02::1' },
    { mac: '00:11:22:33:44:55', address: 'gpu-box.lan' },
  ]) {
    assert.deepEqual(paths(backend({ wake })), [], JSON.stringify(wake));
  }
  const sleep = { after_s: 600, url: 'http://gpu-box.lan:9000/sleep', method: 'GET' };
  assert.deepEqual(paths(backend({ wake: { mac: 'aa:bb:cc:dd:ee:ff' }, idle_sleep: sleep })), []);
});

test('each mistake is named by its key path', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ wake: { mac: 'aa:bb:cc:dd:ee' } }, 'backends[0].wake.mac'],
    [{ wake: { mac: 'aa:bb-cc:dd:ee:ff' } }, 'backends[0].wake.mac'],
    [{ wake: { mac: 'aa:bb:cc:dd:ee:ff', address: 'not a host!' } }, 'backends[0].wake.address'],
    [{ wake: { mac: 'aa:bb:cc:dd:ee:ff', port: 70000 } }, 'backends[0].wake.port'],
    [{ wake: { mac: 'aa:bb:cc:dd:ee:ff', boot_timeout_s: 0 } }, 'backends[0].wake.boot_timeout_s'],
    [{ wake: { mac: 'aa:bb:cc:dd:ee:ff', colour: 'red' } }, 'backends[0].wake.colour'],
    [{ wake: { address: '10.0.0.255' } }, 'backends[0].wake.mac'],
    [{ idle_sleep: { after_s: 60, url: 'http://box/sleep' } }, 'backends[0].idle_sleep'],
    [
      { wake: { mac: 'aa:bb:cc:dd:ee:ff' }, idle_sleep: { after_s: 60, url: 'ftp://box/x' } },
      'backends[0].idle_sleep.url',
    ],
    [{ wake: { mac: 'aa:bb:cc:dd:ee:ff' }, idle_sleep: { url: 'http://box/x' } }, 'backends[0].idle_sleep.after_s'],
    [
      { wake: { mac: 'aa:bb:cc:dd:ee:ff' }, idle_sleep: { after_s: 1, url: 'http://b/x', method: 'DELETE' } },
      'backends[0].idle_sleep.method',
    ],
  ];
  for (const [extra, path] of cases) {
    const got = paths(backend(extra));
    assert.ok(got.includes(path), `${JSON.stringify(extra)}: ${path} in ${JSON.stringify(got)}`);
  }
});

test('a backend validated on its own (console, admin API) gets the same rules with relative paths', () => {
  const result = createConfigValidator().validateBackend({
    name: 'box',
    url: 'http://10.0.0.5:8080',
    wake: { mac: 'aa:bb:cc:dd:ee:ff', address: 'bad host' },
  });
  assert.equal(result.ok, false);
  assert.deepEqual(!result.ok && result.problems.map((p) => p.path), ['wake.address']);
});

test('the magic packet and the addresses that need SO_BROADCAST', () => {
  const mac = Buffer.from('a1b2c3d4e5f6', 'hex');
  const packet = magicPacket(mac);
  assert.equal(packet.length, 102);
  assert.deepEqual(packet.subarray(0, 6), Buffer.alloc(6, 0xff));
  for (let i = 0; i < 16; i++) assert.deepEqual(packet.subarray(6 + i * 6, 12 + i * 6), mac);
  assert.throws(() => magicPacket(Buffer.alloc(5)), RangeError);
  assert.deepEqual(
    ['255.255.255.255', '192.168.1.255', '10.0.255.255', '127.0.0.1', 'ff02::1', 'box.lan'].map(isBroadcastAddress),
    [true, true, true, false, false, false],
  );
});
