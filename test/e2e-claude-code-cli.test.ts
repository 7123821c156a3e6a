/**
 * The Claude Code CLI itself (`@anthropic-ai/claude-code`, pinned dev dependency, a native
 * binary) against the gateway, offline: only ANTHROPIC_BASE_URL and a gateway key are set, so
 * the CLI asks for its default `claude-*` model and a glob alias sends it to a local chat
 * backend. One plain answer, and one Read tool round trip (the CLI runs the tool itself).
 * Each run gets a fresh HOME; retries are capped so a failure cannot hang for minutes.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const CLI = resolve(import.meta.dirname, '..', 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
const installed = existsSync(CLI);
if (!installed && process.env.CI === 'true') throw new Error(`the Claude Code CLI is not installed at ${CLI}`);
if (!installed)
  console.warn(`\n!!! Claude Code CLI not found at ${CLI}: SKIPPING its end-to-end test (npm ci installs it) !!!\n`);

const MASTER = 'gw-master-claude-cli';

interface CliResult {
  is_error: boolean;
  result: string;
  num_turns: number;
  permission_denials: unknown[];
}

describe(
  'the Claude Code CLI through the gateway',
  { skip: installed ? false : 'Claude Code CLI not installed' },
  () => {
    let local: FakeBackend;
    let gw: TestGateway;
    const dirs: string[] = [];
    const scratch = () => {
      const dir = mkdtempSync(join(tmpdir(), 'llmgw-claude-'));
      dirs.push(dir);
      return dir;
    };

    const claude = (args: string[]): Promise<CliResult> =>
      new Promise((resolvePromise, reject) => {
        const home = scratch();
        execFile(
          CLI,
          ['-p', ...args, '--output-format', 'json'],
          {
            cwd: scratch(),
            timeout: 60_000,
            env: {
              PATH: process.env.PATH,
              HOME: home,
              TERM: 'dumb',
              ANTHROPIC_BASE_URL: gw.url,
              ANTHROPIC_API_KEY: MASTER,
              DISABLE_TELEMETRY: '1',
              DISABLE_ERROR_REPORTING: '1',
              DISABLE_AUTOUPDATER: '1',
              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
              DISABLE_NON_ESSENTIAL_MODEL_CALLS: '1',
              CLAUDE_CODE_MAX_RETRIES: '1',
            },
          },
          (err, stdout, stderr) => {
            try {
              resolvePromise(JSON.parse(stdout) as CliResult);
            } catch {
              reject(
                new Error(
                  `claude gave no JSON (${err?.message ?? 'exit 0'}): ${stdout.slice(0, 500)} ${stderr.slice(0, 500)}`,
                ),
              );
            }
          },
        ).stdin?.end();
      });

    before(async () => {
      local = await startFake('llamacpp', { models: ['qwen3-coder'], knobs: { chunkCount: 5 } });
      gw = await startGateway([{ name: 'local', url: local.url }], {
        api_key: MASTER,
        virtual_models: { 'claude-*': { local: 'qwen3-coder' } },
      });
    });
    after(async () => {
      await gw?.close();
      await local?.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    test('claude -p answers through a translated alias', async () => {
      const out = await claude(['say hi']);
      assert.equal(out.is_error, false, out.result);
      assert.equal(out.result, 'tok0 tok1 tok2 tok3 tok4', "the local backend's answer");
      const sent = local.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!;
      assert.equal(sent.body.model, 'qwen3-coder');
      assert.ok(sent.body.tools.length > 10, 'the CLI tools reached the backend');
      await waitFor(
        () =>
          gw.gateway.callLog
            .recent({ backend: 'local' })
            .some((r) => r.endpoint === '/v1/messages' && /^claude-/.test(r.requested_model ?? '')),
        'logged',
      );
    });

    test('a Read tool round trip: the backend asks, the CLI reads, the result comes back', async () => {
      const file = join(scratch(), 'notes.txt');
      writeFileSync(file, 'FIRST-LINE-MARKER alpha\nsecond line\n');
      local.setKnobs({
        toolCall: true,
        toolCallOnce: true,
        toolCallName: 'Read',
        toolCallArguments: JSON.stringify({ file_path: file }),
      });
      try {
        const before = local.requests.length;
        const out = await claude([`read ${file} and tell me its first line`, '--allowedTools', 'Read']);
        assert.equal(out.is_error, false, out.result);
        assert.equal(out.num_turns, 2);
        assert.deepEqual(out.permission_denials, []);
        const turns = local.requests.slice(before).filter((r) => r.path === '/v1/chat/completions');
        assert.equal(turns.length, 2);
        const toolMessage = turns[1].body.messages.find((m: { role: string }) => m.role === 'tool');
        assert.ok(toolMessage, 'the second turn carries the tool result');
        assert.match(String(toolMessage.content), /FIRST-LINE-MARKER alpha/);
        const call = turns[1].body.messages.findLast((m: { role: string }) => m.role === 'assistant').tool_calls[0];
        assert.equal(call.function.name, 'Read');
        assert.equal(toolMessage.tool_call_id, call.id);
      } finally {
        local.setKnobs({ toolCall: false, toolCallOnce: false });
      }
    });
  },
);
