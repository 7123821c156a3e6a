/**
 * The gateway's one secret (`store/secret.key`, 32 random bytes, mode 0600) and the SecretBox
 * built on it: AES-256-GCM for secrets at rest, HMAC-SHA256 digests for O(1) key lookup.
 * Two subkeys are derived from the secret with HKDF so no key serves two purposes.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SecretBox } from './secret-box.ts';
import { ensurePrivateDir } from './private-files.ts';

export const SECRET_FILE = 'secret.key';
const SECRET_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface DerivedKeys {
  encryptionKey: Buffer;
  digestKey: Buffer;
}

/** HKDF-SHA256 subkeys of the gateway secret, one per use. */
export function deriveKeys(secret: Buffer): DerivedKeys {
  if (secret.length !== SECRET_BYTES) throw new Error(`secret must be ${SECRET_BYTES} bytes, got ${secret.length}`);
  const derive = (label: string) => Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), label, 32));
  return {
    encryptionKey: derive('llm-gateway/v1/aes-256-gcm'),
    digestKey: derive('llm-gateway/v1/hmac-sha256-lookup'),
  };
}

/** A SecretBox over an in-memory secret (tests; `loadOrCreateSecretBox` for the real one). */
export function createSecretBox(secret: Buffer): SecretBox {
  const { encryptionKey, digestKey } = deriveKeys(secret);
  return {
    encrypt(plain) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
    },
    decrypt(sealed) {
      const raw = Buffer.from(sealed, 'base64');
      if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('ciphertext is too short');
      const decipher = createDecipheriv('aes-256-gcm', encryptionKey, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      // final() throws "Unsupported state or unable to authenticate data" on tampering.
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    },
    digest(plain) {
      return createHmac('sha256', digestKey).update(plain, 'utf8').digest('hex');
    },
  };
}

export interface SecretFileOptions {
  /** Called when an existing secret.key was readable by group/others (it is then chmod-ed to 0600). */
  warn?: (message: string) => void;
}

/**
 * Reads `storeDir/secret.key`, creating it (32 random bytes, mode 0600) on first start.
 * A file readable by group or others is tightened to 0600 with a warning; a file of the
 * wrong size is refused (replacing it would make every stored secret unreadable).
 */
export function loadOrCreateSecretBox(storeDir: string, options: SecretFileOptions = {}): SecretBox {
  return createSecretBox(loadOrCreateSecret(storeDir, options));
}

export function loadOrCreateSecret(storeDir: string, options: SecretFileOptions = {}): Buffer {
  ensurePrivateDir(storeDir);
  const file = join(storeDir, SECRET_FILE);
  const created = createIfMissing(file);
  if (created) return created;

  const mode = statSync(file).mode & 0o777;
  if (mode & 0o077) {
    chmodSync(file, 0o600);
    options.warn?.(`${file} was accessible to group/others (mode ${mode.toString(8)}); changed to 0600`);
  }
  const secret = readFileSync(file);
  if (secret.length !== SECRET_BYTES) {
    throw new Error(`${file} must hold exactly ${SECRET_BYTES} bytes (found ${secret.length}); refusing to use it`);
  }
  return secret;
}

/** Writes a fresh secret with O_EXCL (no race with a second process); undefined if the file exists. */
function createIfMissing(file: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw err;
  }
  const secret = randomBytes(SECRET_BYTES);
  try {
    writeSync(fd, secret);
  } finally {
    closeSync(fd);
  }
  chmodSync(file, 0o600); // a umask can only narrow 0600; make it exactly 0600 so we can read it back
  return secret;
}
