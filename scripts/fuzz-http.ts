/**
 * HTTP fuzz and probe of the gateway, over loopback only: an open and a locked gateway over fake
 * backends (OpenAI-compatible, vLLM audio, Anthropic, Responses-native, two ComfyUIs), random and
 * mutated requests to every route, then the checks of test/helpers/fuzz-run.ts. Stops by itself.
 *
 *   npx tsx scripts/fuzz-http.ts --cases 3000 --seed 1 [--concurrency 4] [--json] [--dump defects.json]
 *
 * Exit code 1 when a defect was found (each printed with the request that showed it).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runFuzz, type FuzzFinding } from '../test/helpers/fuzz-run.ts';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '3000' },
    seed: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '4' },
    json: { type: 'boolean', default: false },
    dump: { type: 'string' },
  },
});

const report = await runFuzz({
  cases: Number(values.cases), seed: Number(values.seed), concurrency: Number(values.concurrency),
  log: (line) => console.error(line),
});

const grouped = (findings: FuzzFinding[]) => {
  const byKind = new Map<string, FuzzFinding[]>();
  for (const f of findings) byKind.set(f.kind, [...(byKind.get(f.kind) ?? []), f]);
  return byKind;
};

if (values.dump) writeFileSync(values.dump, JSON.stringify(report.defects, null, 2));
if (values.json) console.log(JSON.stringify(report, null, 2));
else {
  console.log(`seed ${values.seed}: ${report.cases} cases in ${(report.ms / 1000).toFixed(1)} s`);
  console.log('statuses:', JSON.stringify(report.statuses));
  console.log('call-log rows:', JSON.stringify(report.rows), 'ids named again:', JSON.stringify(report.ids));
  for (const [title, findings] of [['DEFECTS', report.defects], ['notes', report.notes]] as const) {
    console.log(`${title}: ${findings.length}`);
    for (const [kind, list] of grouped(findings)) {
      console.log(`  ${kind} ×${list.length}`);
      for (const f of list.slice(0, 5)) console.log(`    ${f.label.slice(0, 160)}  ${f.detail.slice(0, 700)}`);
    }
  }
}
process.exitCode = report.defects.length ? 1 : 0;
