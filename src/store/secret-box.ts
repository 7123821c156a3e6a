/** Encrypts secrets at rest (backend API keys, user keys). Implemented by store/secret.ts. */
export interface SecretBox {
  /** Returns an opaque, self-contained ciphertext string (safe to store). */
  encrypt(plain: string): string;
  /** Inverse of `encrypt`; throws on a tampered or foreign ciphertext. */
  decrypt(cipher: string): string;
  /** Keyed digest (HMAC-SHA256, hex) for O(1) lookup of a key without decrypting. */
  digest(plain: string): string;
}
