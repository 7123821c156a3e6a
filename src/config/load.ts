/**
 * Turns config.yaml text into a validated `GatewayConfig`, or into the full list of what is
 * wrong with it: YAML syntax (with line numbers), `${VAR}` interpolation, schema.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { embeddedDefaultConfig, howToWriteConfigHint } from './defaults.ts';
import { interpolateDocument } from './interpolate.ts';
import { createConfigValidator, type ConfigProblem, type ConfigValidator } from './schema.ts';
import type { GatewayConfig } from './types.ts';
import { resolveWorkflowFiles } from './workflow-files.ts';

export type { ConfigProblem } from './schema.ts';
export type ConfigResult = { ok: true; config: GatewayConfig } | { ok: false; problems: ConfigProblem[] };

/**
 * Parses, interpolates and validates config text. An empty text gives all defaults.
 * Pass a `validator` to reuse a compiled schema across many calls (hot reload), and
 * `baseDir` (config.yaml's folder) to read the workflow files `image_models` names; without
 * it they stay unread (no `workflow_json`).
 */
export function parseConfigText(
  text: string,
  env: NodeJS.ProcessEnv,
  validator: ConfigValidator = createConfigValidator(),
  baseDir?: string,
): ConfigResult {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true, logLevel: 'silent' });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        path: e.linePos ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '',
        message: `YAML syntax: ${e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`,
      })),
    };
  }
  const interpolationProblems = interpolateDocument(doc, env);
  let raw: unknown;
  try {
    raw = doc.toJS() ?? {};
  } catch (err) {
    return {
      ok: false,
      problems: [...interpolationProblems, { path: '', message: `YAML: ${(err as Error).message}` }],
    };
  }
  const validation = validator.validate(raw);
  if (interpolationProblems.length === 0)
    return validation.ok && baseDir !== undefined ? withWorkflowFiles(validation.config, baseDir) : validation;
  // A value that could not be interpolated is left as written; do not also complain about it.
  const shadowed = (p: ConfigProblem) =>
    interpolationProblems.some(
      (ip) => p.path === ip.path || p.path.startsWith(`${ip.path}.`) || p.path.startsWith(`${ip.path}[`),
    );
  const others = validation.ok ? [] : validation.problems.filter((p) => !shadowed(p));
  return { ok: false, problems: [...interpolationProblems, ...others] };
}

function withWorkflowFiles(config: GatewayConfig, baseDir: string): ConfigResult {
  const problems = resolveWorkflowFiles(config, baseDir);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, config };
}

/** Reads and parses a config file (and the workflow files it names); an unreadable file is a problem too. */
export function loadConfigFile(path: string, env: NodeJS.ProcessEnv, validator?: ConfigValidator): ConfigResult {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return { ok: false, problems: [{ path: '', message: `cannot read ${path}: ${(err as Error).message}` }] };
  }
  return parseConfigText(text, env, validator, dirname(resolve(path)));
}

/**
 * What start-up runs on: the file when it exists (valid or not — the caller exits on
 * problems); when it does not, the embedded default fleet, unless the path was given
 * explicitly (`--config`, `LLM_GATEWAY_CONFIG`): then a missing file is a problem too.
 */
export function loadBootConfig(
  path: string,
  env: NodeJS.ProcessEnv,
  opts: { explicit?: boolean } = {},
): { source: 'file' | 'embedded'; result: ConfigResult } {
  if (existsSync(path)) return { source: 'file', result: loadConfigFile(path, env) };
  if (opts.explicit)
    return {
      source: 'file',
      result: { ok: false, problems: [{ path: '', message: `config file not found: ${path}` }] },
    };
  return { source: 'embedded', result: { ok: true, config: embeddedDefaultConfig() } };
}

/** The one line start-up logs when it runs on the embedded default (no file at `path`). */
export function noConfigFileMessage(path: string): string {
  return (
    `no config file at ${path}: running on built-in defaults (probing Ollama, llama.cpp, vLLM, LM Studio ` +
    `and ComfyUI on their usual 127.0.0.1 ports). ${howToWriteConfigHint}`
  );
}
