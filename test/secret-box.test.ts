import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecretBox, deriveKeys, loadOrCreateSecret, loadOrCreateSecretBox } from '../src/store/secret.ts';

function tempStore(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'secret-box-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'store'); // not yet existing: the loader creates it
}

test('first start creates store/secret.key with 32 bytes and mode 0600', (t) => {
  const storeDir = tempStore(t);
  loadOrCreateSecretBox(storeDir);
  const file = join(storeDir, 'secret.key');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(readFileSync(file).length, 32);
});

test('a second start reuses the same secret, so earlier ciphertexts and digests still work', (t) => {
  const storeDir = tempStore(t);
  const first = loadOrCreateSecretBox(storeDir);
  const sealed = first.encrypt('backend-api-key');
  const second = loadOrCreateSecretBox(storeDir);
  assert.equal(second.decrypt(sealed), 'backend-api-key');
  assert.equal(second.digest('sk-abc'), first.digest('sk-abc'));
});

test('a group/world-readable secret.key is tightened to 0600 with a warning', (t) => {
  const storeDir = tempStore(t);
  const original = loadOrCreateSecret(storeDir);
  const file = join(storeDir, 'secret.key');
  chmodSync(file, 0o644);
  const warnings: string[] = [];
  const again = loadOrCreateSecret(storeDir, { warn: (m) => warnings.push(m) });
  assert.deepEqual(again, original);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /0600/);
});

test('a secret.key of the wrong size is refused rather than replaced', (t) => {
  const storeDir = tempStore(t);
  loadOrCreateSecret(storeDir);
  const file = join(storeDir, 'secret.key');
  writeFileSync(file, 'short', { mode: 0o600 });
  assert.throws(() => loadOrCreateSecret(storeDir), /32 bytes/);
  assert.equal(readFileSync(file, 'utf8'), 'short');
});

test('encrypt/decrypt round-trips, with a fresh IV every time', () => {
  const box = createSecretBox(randomBytes(32));
  const plain = 'sk-ünïcødé-🔑-' + 'x'.repeat(500);
  const a = box.encrypt(plain);
  const b = box.encrypt(plain);
  assert.notEqual(a, b);
  assert.ok(!a.includes('sk-'));
  assert.equal(box.decrypt(a), plain);
  assert.equal(box.decrypt(b), plain);
  assert.equal(box.decrypt(box.encrypt('')), '');
});

test('tampered, truncated or foreign ciphertexts throw', () => {
  const box = createSecretBox(randomBytes(32));
  const sealed = Buffer.from(box.encrypt('secret value'), 'base64');
  for (const index of [0, 12, 28, sealed.length - 1]) {
    const tampered = Buffer.from(sealed);
    tampered[index] ^= 0x01;
    assert.throws(() => box.decrypt(tampered.toString('base64')), `flipping byte ${index} must be detected`);
  }
  assert.throws(() => box.decrypt(sealed.subarray(0, 20).toString('base64')), /too short/);
  const foreign = createSecretBox(randomBytes(32));
  assert.throws(() => foreign.decrypt(sealed.toString('base64')));
});

test('digests are stable, hex HMAC-SHA256 under a subkey used for nothing else', () => {
  const secret = randomBytes(32);
  const box = createSecretBox(secret);
  const { encryptionKey, digestKey } = deriveKeys(secret);
  assert.match(box.digest('sk-one'), /^[0-9a-f]{64}$/);
  assert.equal(box.digest('sk-one'), createSecretBox(Buffer.from(secret)).digest('sk-one'));
  assert.notEqual(box.digest('sk-one'), box.digest('sk-two'));
  assert.equal(box.digest('sk-one'), createHmac('sha256', digestKey).update('sk-one').digest('hex'));

  assert.notDeepEqual(encryptionKey, digestKey);
  assert.notDeepEqual(encryptionKey, secret);
  assert.notDeepEqual(digestKey, secret);
  assert.notEqual(box.digest('sk-one'), createHmac('sha256', secret).update('sk-one').digest('hex'));
  assert.notEqual(box.digest('sk-one'), createHmac('sha256', encryptionKey).update('sk-one').digest('hex'));
});

test('a secret of the wrong length is rejected', () => {
  assert.throws(() => createSecretBox(randomBytes(16)), /32 bytes/);
});
