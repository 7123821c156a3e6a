import assert from 'node:assert/strict';

/** Polls `cond` (sync or async) every 10 ms until it holds; fails the test naming `what` after `timeoutMs`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
