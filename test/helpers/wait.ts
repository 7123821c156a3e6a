import assert from 'node:assert/strict';

/** Polls `cond` every 10 ms until it holds; fails the test naming `what` after `timeoutMs`. */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
