import assert from 'node:assert/strict';
import { test } from 'node:test';
import { substituteEnv, typedScalar } from '../src/config/interpolate.ts';
import { parseConfigText } from '../src/config/load.ts';

function configOf(text: string, env: NodeJS.ProcessEnv) {
  const result = parseConfigText(text, env);
  assert.ok(result.ok, `expected a valid config, got ${JSON.stringify(!result.ok && result.problems)}`);
  return result.config;
}

function problemsOf(text: string, env: NodeJS.ProcessEnv) {
  const result = parseConfigText(text, env);
  assert.equal(result.ok, false, 'expected problems');
  return result.ok ? [] : result.problems;
}

test('a set variable is substituted, also inside a longer string', () => {
  assert.deepEqual(substituteEnv('http://${HOST}:${PORT}', { HOST: 'gpu1', PORT: '8080' }), {
    text: 'http://gpu1:8080',
    errors: [],
  });
  const config = configOf('backends:\n  - name: a\n    url: http://${HOST}:8080\n    api_key: ${KEY}\n', {
    HOST: 'gpu1',
    KEY: 'sk-1',
  });
  assert.equal(config.backends[0].url, 'http://gpu1:8080');
  assert.equal(config.backends[0].api_key, 'sk-1');
});

test('${VAR:-default} falls back when the variable is unset or empty, not when it is set', () => {
  assert.equal(substituteEnv('${X:-fallback}', {}).text, 'fallback');
  assert.equal(substituteEnv('${X:-fallback}', { X: '' }).text, 'fallback');
  assert.equal(substituteEnv('${X:-fallback}', { X: 'set' }).text, 'set');
  assert.equal(substituteEnv('${X}', { X: '' }).text, '', 'an empty value counts as set');
  assert.equal(configOf('log_level: ${LEVEL:-debug}\n', {}).log_level, 'debug');
});

test('an unset variable without default is a problem naming the variable and the key path', () => {
  const problems = problemsOf(
    'backends:\n  - name: a\n    url: http://h:1\n  - name: or\n    url: https://openrouter.ai/api\n    api_key: ${OPENROUTER_API_KEY}\n',
    {},
  );
  assert.equal(problems.length, 1, JSON.stringify(problems));
  assert.equal(problems[0].path, 'backends[1].api_key');
  assert.match(problems[0].message, /OPENROUTER_API_KEY/);
});

test('every unset variable is reported, alongside schema problems elsewhere', () => {
  const problems = problemsOf('log_level: ${A}\nstore_dir: ${B}/x\nmodel_prefix: maybe\n', {});
  assert.deepEqual(problems.map((p) => p.path).sort(), ['log_level', 'model_prefix', 'store_dir']);
  assert.match(problems.find((p) => p.path === 'store_dir')!.message, /\bB\b/);
});

test('a commented-out line with an unset variable never fails', () => {
  const config = configOf('# api_key: ${NOT_SET_ANYWHERE}\nlog_level: warn # ${ALSO_NOT_SET}\n', {});
  assert.equal(config.log_level, 'warn');
  assert.equal(config.api_key, undefined);
});

test('$${ escapes to a literal ${', () => {
  assert.deepEqual(substituteEnv('cost $${HOME} and ${HOME}', { HOME: '/h' }), {
    text: 'cost ${HOME} and /h',
    errors: [],
  });
  const config = configOf('backends:\n  - name: a\n    url: http://h:1\n    api_key: "$${NOT_A_VAR}"\n', {});
  assert.equal(config.backends[0].api_key, '${NOT_A_VAR}');
});

test('malformed and unterminated references are problems', () => {
  assert.equal(substituteEnv('${not a name}', {}).errors.length, 1);
  assert.equal(substituteEnv('abc ${OPEN', {}).errors.length, 1);
});

test('a plain scalar that is one ${...} is typed like YAML; a quoted one stays a string', () => {
  const config = configOf(
    'max_parked: ${MAX_PARKED:-250}\ncapture_bodies: ${CAPTURE:-true}\nbackends:\n  - name: a\n    url: http://h:1\n    paid: ${PAID:-false}\n    max_concurrent: ${N}\n    api_key: "${KEY}"\n',
    { N: '4', KEY: '12345' },
  );
  assert.equal(config.max_parked, 250);
  assert.equal(config.capture_bodies, true);
  assert.equal(config.backends[0].paid, false);
  assert.equal(config.backends[0].max_concurrent, 4);
  assert.equal(config.backends[0].api_key, '12345');
  assert.equal(typedScalar('4000'), 4000);
  assert.equal(typedScalar('a: b'), 'a: b', 'only scalars are typed');
  assert.equal(typedScalar('sk-or # tail'), 'sk-or # tail', 'text that is not a number/boolean/null is kept verbatim');
});

test('a whole-scalar substitution that is empty means "not set" (the default applies)', () => {
  const config = configOf('api_key: ${GATEWAY_API_KEY:-}\nstore_dir: ${STORE:-}\n', {});
  assert.equal(config.api_key, undefined);
  assert.equal(config.store_dir, 'store');
});
