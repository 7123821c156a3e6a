/**
 * `POST /prompt` on the fake ComfyUI: the body checked as server.py does (prompt, prompt_id,
 * number / front), the workflow validated (comfyui-validate.ts), and the prompt queued.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { validatePrompt, type ComfyErrorBody } from './comfyui-validate.ts';
import type { ComfyPromptRecord } from './comfyui-types.ts';
import { pump, type ComfyCore } from './comfyui-execute.ts';
import { json } from './comfyui-http.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function inputFileNames(c: ComfyCore): Set<string> {
  return new Set([...c.s.files.keys()].filter((k) => k.startsWith('input/')).map((k) => k.slice('input/'.length)));
}

function promptError(res: ServerResponse, error: ComfyErrorBody, nodeErrors: Record<string, unknown> = {}): void {
  json(res, 400, { error, node_errors: nodeErrors });
}

export function submitPrompt(c: ComfyCore, body: any, headers: IncomingMessage['headers'], res: ServerResponse): void {
  if (typeof body !== 'object' || body === null || !('prompt' in body)) {
    return promptError(res, {
      type: 'no_prompt',
      message: 'No prompt provided',
      details: 'No prompt provided',
      extra_info: {},
    });
  }
  let promptId: string;
  if (body.prompt_id === undefined || body.prompt_id === null) promptId = randomUUID();
  else if (typeof body.prompt_id === 'string' && UUID_RE.test(body.prompt_id)) promptId = body.prompt_id;
  else
    return promptError(res, {
      type: 'invalid_prompt_id',
      message: 'Invalid prompt_id format',
      details: `prompt_id must be a canonical lowercase UUID, got: ${String(body.prompt_id)}`,
      extra_info: {},
    });
  const prompt = body.prompt;
  if (typeof prompt !== 'object' || prompt === null || Array.isArray(prompt)) {
    return promptError(res, {
      type: 'invalid_prompt',
      message: 'Invalid prompt',
      details: 'prompt must be an object',
      extra_info: {},
    });
  }
  let num: number;
  if (typeof body.number === 'number') num = body.number;
  else {
    num = body.front === true ? -c.s.number : c.s.number;
    c.s.number++;
  }
  const extraData: Record<string, unknown> =
    typeof body.extra_data === 'object' && body.extra_data !== null ? { ...body.extra_data } : {};
  if (typeof body.client_id === 'string') extraData.client_id = body.client_id;
  const usage = headers['comfy-usage-source'];
  if (typeof usage === 'string') extraData.comfy_usage_source = usage;
  const targets = Array.isArray(body.partial_execution_targets)
    ? body.partial_execution_targets.map(String)
    : undefined;
  const v = validatePrompt(prompt, {
    objectInfo: c.s.objectInfo,
    inputFiles: inputFileNames(c),
    validateCombos: c.s.knobs.validateCombos,
    skipUploadCheck: c.s.knobs.missingUpload === 'execution',
    legacyMissingNode: c.s.knobs.legacyMissingNode,
    targets,
  });
  if (!v.ok) return promptError(res, v.error, v.nodeErrors);
  extraData.create_time = Date.now();
  const record: ComfyPromptRecord = {
    id: promptId,
    number: num,
    clientId: typeof body.client_id === 'string' ? body.client_id : null,
    prompt,
    extraData,
    outputs: v.outputs,
    status: 'pending',
    submittedAt: Date.now(),
  };
  c.s.prompts.push(record);
  c.s.pending.push(record);
  json(res, 200, { prompt_id: promptId, number: num, node_errors: v.nodeErrors });
  c.ws.broadcastStatus();
  setImmediate(() => pump(c));
}
