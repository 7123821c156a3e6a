/**
 * `${VAR}` / `${VAR:-default}` substitution in config.yaml. It runs on the parsed YAML's string
 * values (never on the raw text, so a commented-out line can never fail), with shell-like
 * rules:
 *
 * - `${VAR}` is VAR's value (an empty value counts as set); an unset VAR is a problem.
 * - `${VAR:-default}` is `default` when VAR is unset or empty.
 * - `$${` is a literal `${`.
 * - A plain (unquoted) scalar that is exactly one `${...}` is read as a YAML scalar after
 *   substitution, so `max_parked: ${N:-100}` is a number and `paid: ${X:-false}` a boolean
 *   (an empty result means "not set"). Quote it (`"${KEY}"`) to keep the text a string.
 *
 * Not supported: nested references (`${A:-${B}}`) and `}` inside a default.
 */
import { isMap, isScalar, isSeq, parseDocument, Scalar, type Document } from 'yaml';
import { childPath, type ConfigProblem } from './schema.ts';

export type Substituted = { text: string; errors: string[] };

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s;
const WHOLE_REFERENCE = /^\$\{[^}]*\}$/;

/** Replaces every `${...}` in `text`; `errors` says what could not be replaced (and why). */
export function substituteEnv(text: string, env: NodeJS.ProcessEnv): Substituted {
  let out = '';
  const errors: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      out += '${';
      i += 3;
      continue;
    }
    if (!text.startsWith('${', i)) {
      out += text[i];
      i += 1;
      continue;
    }
    const close = text.indexOf('}', i + 2);
    if (close < 0) {
      errors.push(`unterminated "\${" (write "$\${" for a literal "\${")`);
      out += text.slice(i);
      break;
    }
    const inner = text.slice(i + 2, close);
    const ref = REFERENCE.exec(inner);
    if (!ref) {
      errors.push(`"\${${inner}}" is not a variable reference (use \${NAME} or \${NAME:-default})`);
    } else {
      const [, name, fallback] = ref;
      const value = env[name];
      if (value !== undefined && (fallback === undefined || value !== '')) out += value;
      else if (fallback !== undefined) out += fallback;
      else errors.push(`environment variable ${name} is not set (give a default with \${${name}:-default})`);
    }
    i = close + 1;
  }
  return { text: out, errors };
}

/** Reads a substituted whole-scalar as YAML would: numbers, booleans, null; anything else stays text. */
export function typedScalar(text: string): unknown {
  if (text.trim() === '') return null;
  const doc = parseDocument(text, { logLevel: 'silent' });
  if (doc.errors.length > 0 || !isScalar(doc.contents)) return text;
  const value = doc.contents.value;
  return typeof value === 'number' || typeof value === 'boolean' || value === null ? value : text;
}

/** Interpolates one string value found at `path`; `node.type` says whether it was quoted. */
function interpolateScalar(node: Scalar, path: string, env: NodeJS.ProcessEnv, problems: ConfigProblem[]): void {
  const text = node.value as string;
  if (!text.includes('${')) return;
  const { text: substituted, errors } = substituteEnv(text, env);
  for (const message of errors) problems.push({ path, message });
  if (errors.length > 0) return;
  const typed = node.type === Scalar.PLAIN && WHOLE_REFERENCE.test(text);
  node.value = typed ? typedScalar(substituted) : substituted;
}

function walk(node: unknown, path: string, env: NodeJS.ProcessEnv, problems: ConfigProblem[]): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      walk(pair.value, childPath(path, key), env, problems);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => walk(item, childPath(path, i), env, problems));
  } else if (isScalar(node) && typeof node.value === 'string') {
    interpolateScalar(node, path, env, problems);
  }
  // Aliases are skipped: the anchored node they point to is interpolated where it stands.
}

/**
 * Substitutes environment variables in every string value of a parsed YAML document, in
 * place. Returns the problems (unset variables, malformed references) with their key paths;
 * a value with a problem is left as written.
 */
export function interpolateDocument(doc: Document, env: NodeJS.ProcessEnv): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  walk(doc.contents, '', env, problems);
  return problems;
}
