/**
 * Reading the workflow files `image_models` entries name (`workflow: workflows/sd15.json`,
 * relative to config.yaml's folder) into their `workflow_json`, once the file's schema is
 * valid. `workflow` stays beside it, so the console can show where a workflow came from. A
 * file is read whenever config.yaml is (re)loaded: after editing only a workflow file, save
 * config.yaml again. Files are parsed with parseExactJson: an integer baked into a workflow
 * beyond 2^53 (a seed up to 2^64) stays exact, as a bigint, and the compiler's writeJson
 * prints it back digit for digit. Code that serialises the configuration itself must not
 * use plain JSON.stringify on `workflow_json` (it throws on a bigint): writeJson does.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isObject } from '../json.ts';
import { parseExactJson } from '../wire/exact-json.ts';
import { workflowShapeProblem } from './media-schema.ts';
import { childPath, type ConfigProblem } from './problems.ts';
import type { GatewayConfig } from './types.ts';
import type { Workflow } from './workflow-types.ts';

/** Fills `workflow_json` of every entry that names a file; mutates `config`. */
export function resolveWorkflowFiles(config: GatewayConfig, baseDir: string): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const cache = new Map<string, Read>();
  for (const [alias, entries] of Object.entries(config.image_models)) {
    entries.forEach((entry, i) => {
      if (entry.workflow === undefined || entry.workflow_json !== undefined) return;
      const file = resolve(baseDir, entry.workflow);
      let read = cache.get(file);
      if (!read) {
        read = readWorkflow(file);
        cache.set(file, read);
      }
      // entries naming one file share one (read-only) object: the compiler copies before it edits
      if ('workflow' in read) entry.workflow_json = read.workflow;
      else
        problems.push({
          path: childPath(childPath(childPath('image_models', alias), i), 'workflow'),
          message: read.problem,
        });
    });
  }
  return problems;
}

type Read = { workflow: Workflow } | { problem: string };

function readWorkflow(file: string): Read {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return {
      problem:
        `cannot read ${file}: ` +
        `${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    };
  }
  let value: unknown;
  try {
    value = parseExactJson(text);
  } catch (err) {
    return { problem: `${file} is not JSON: ${(err as Error).message}` };
  }
  const message = workflowShapeProblem(value);
  if (message || !isObject(value)) return { problem: `${file}: ${message}` };
  return { workflow: value as Workflow };
}
