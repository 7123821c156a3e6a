import { test } from 'node:test';
import assert from 'node:assert/strict';
import { attributeSource, foldIp } from '../src/auth/source.ts';

const none: Record<string, string> = {};

test('IPv4 is shown as is', () => {
  assert.equal(attributeSource({ ip: '192.168.1.20', ipAliases: none }), '192.168.1.20');
});

test('IPv4-mapped IPv6 is shown as IPv4', () => {
  assert.equal(attributeSource({ ip: '::ffff:10.0.0.7', ipAliases: none }), '10.0.0.7');
  assert.equal(foldIp('::ffff:a00:7'), '10.0.0.7');
});

test('other IPv6 addresses fold to their /64', () => {
  assert.equal(attributeSource({ ip: '2001:db8:1:2:aaaa:bbbb:cccc:dddd', ipAliases: none }), '2001:db8:1:2::/64');
  assert.equal(foldIp('2001:0db8:0001:0002::1'), '2001:db8:1:2::/64');
  assert.equal(foldIp('2001:db8::1'), '2001:db8::/64');
  assert.equal(attributeSource({ ip: 'fe80::1%eth0', ipAliases: none }), 'fe80::/64');
  assert.equal(foldIp('::1'), '::/64');
  assert.equal(foldIp('2001:db8:0:5::9'), '2001:db8:0:5::/64');
  assert.equal(foldIp('64:ff9b::192.0.2.33'), '64:ff9b::/64');
});

test('addresses of one /64 share an attribution', () => {
  const a = attributeSource({ ip: '2001:db8:1:2::1', ipAliases: none });
  const b = attributeSource({ ip: '2001:db8:1:2:dead:beef:0:1', ipAliases: none });
  assert.equal(a, b);
  assert.notEqual(a, attributeSource({ ip: '2001:db8:1:3::1', ipAliases: none }));
});

test('IP aliases replace the address, keyed by IP or by /64', () => {
  const ipAliases = { '192.168.1.20': 'desk', '2001:db8:1:2::/64': 'laptop', '2001:db8:9:9::5': 'nas' };
  assert.equal(attributeSource({ ip: '192.168.1.20', ipAliases }), 'desk');
  assert.equal(attributeSource({ ip: '::ffff:192.168.1.20', ipAliases }), 'desk');
  assert.equal(attributeSource({ ip: '2001:db8:1:2::77', ipAliases }), 'laptop');
  assert.equal(attributeSource({ ip: '2001:db8:9:9::5', ipAliases }), 'nas');
  assert.equal(attributeSource({ ip: '2001:db8:9:9::6', ipAliases }), '2001:db8:9:9::/64');
  assert.equal(attributeSource({ ip: '10.9.9.9', ipAliases }), '10.9.9.9');
});

test('X-Source wins over the IP, and is cleaned up', () => {
  const ipAliases = { '192.168.1.20': 'desk' };
  assert.equal(attributeSource({ header: 'n8n-nightly', ip: '192.168.1.20', ipAliases }), 'n8n-nightly');
  assert.equal(attributeSource({ header: ['first', 'second'], ip: '192.168.1.20', ipAliases }), 'first');
  assert.equal(attributeSource({ header: '  bad\u0000\nname  ', ip: '1.2.3.4', ipAliases }), 'badname');
  assert.equal(attributeSource({ header: 'x'.repeat(500), ip: '1.2.3.4', ipAliases }).length, 64);
  assert.equal(attributeSource({ header: '   ', ip: '192.168.1.20', ipAliases }), 'desk');
});

test('the user wins over X-Source and the IP', () => {
  assert.equal(
    attributeSource({ user: 'alice', header: 'n8n', ip: '192.168.1.20', ipAliases: { '192.168.1.20': 'desk' } }),
    'alice',
  );
});
