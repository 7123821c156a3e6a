#!/usr/bin/env node
// Waits until the gateway's GET /health/ready answers 200, for the systemd unit's ExecStartPost
// (units ordered After= it then start once it can serve) or a container entrypoint.
//   node scripts/wait-ready.mjs [url] [timeout_s]
//   url default http://127.0.0.1:$PORT/health/ready (PORT default 4000); timeout default 60 s.
// Exits 0 once ready; 1 at the deadline, printing the last answer's reasons.
const url = process.argv[2] ?? `http://127.0.0.1:${process.env.PORT ?? 4000}/health/ready`;
const timeoutS = Number(process.argv[3] ?? 60);
const deadline = Date.now() + timeoutS * 1000;
let last = 'no answer';
while (Date.now() < deadline) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    const body = await res.json().catch(() => ({}));
    if (res.status === 200) process.exit(0);
    last = `${res.status}: ${(body.reasons ?? []).join('; ') || 'not ready'}`;
  } catch (err) {
    last = err instanceof Error ? err.message : String(err);
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
}
console.error(`llm-gateway not ready after ${timeoutS} s (${url}): ${last}`);
process.exit(1);
