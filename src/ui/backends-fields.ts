/**
 * The fields of the backend form, in the order and groups the page shows them: one entry per
 * BackendSpec option (config.example.yaml documents them), with which kinds of backend read it.
 * Only presentation lives here (labels, hints, which inputs); what is valid is the config
 * validator's business, reached through services.admin.
 */
import type { BackendType } from '../config/types.ts';
import { COMFY_DEFAULTS } from '../config/defaults.ts';
import { speaks, typesWhere } from '../backends/kinds/index.ts';

export type FieldKind = 'text' | 'url' | 'secret' | 'check' | 'number' | 'select' | 'lines' | 'json';

export interface FieldMeta {
  key: string;
  label: string;
  kind: FieldKind;
  /** The kinds of backend that read the option (the page hides it for the others, with script). */
  types: readonly BackendType[];
  hint: string;
  options?: readonly { value: string; label: string }[];
  placeholder?: string;
  /** check: always posted as true/false (the option has a default); otherwise unchecked = not set. */
  explicit?: boolean;
  /** number: whole numbers only (shown as a hint to the keyboard). */
  integer?: boolean;
}

export interface FieldGroup {
  id: string;
  legend: string;
  fields: readonly FieldMeta[];
}

export const ALL_TYPES: readonly BackendType[] = typesWhere(() => true);
const LLM: readonly BackendType[] = typesWhere((k) => !k.isMedia);
/** The kinds that get chat calls as sent: the chat options (sampling, reasoning, Responses) are theirs. */
const OPENAI: readonly BackendType[] = typesWhere((k) => speaks(k, 'chat'));
const COMFY: readonly BackendType[] = typesWhere((k) => k.isMedia);
const AUTH_MODE: readonly BackendType[] = typesWhere((k) => k.hasAuthMode);

export const TYPE_LABELS: Record<BackendType, string> = {
  openai: 'OpenAI-compatible (llama.cpp, vLLM, Ollama, OpenRouter…)',
  ollama: 'Ollama (OpenAI-compatible /v1, native /api/* passed through)',
  anthropic: 'Anthropic (passthrough, /v1/messages only)',
  comfyui: 'ComfyUI (image, video, audio generation)',
};

const seconds = (key: keyof typeof COMFY_DEFAULTS) => `Default ${String(COMFY_DEFAULTS[key])}`;

export const FIELD_GROUPS: readonly FieldGroup[] = [
  {
    id: 'basics',
    legend: 'Backend',
    fields: [
      {
        key: 'name',
        label: 'Name',
        kind: 'text',
        types: ALL_TYPES,
        placeholder: 'gpu1-llamacpp',
        hint: "Letters, digits, '.', '_' and '-'. Models are listed as <name>/<model>.",
      },
      {
        key: 'type',
        label: 'Type',
        kind: 'select',
        types: ALL_TYPES,
        hint: 'What the server speaks. The form shows the options of the chosen type.',
        options: ALL_TYPES.map((t) => ({ value: t, label: TYPE_LABELS[t] })),
      },
      {
        key: 'url',
        label: 'URL',
        kind: 'url',
        types: ALL_TYPES,
        placeholder: 'http://192.168.1.20:8080',
        hint: 'Base URL without a trailing /v1 (the gateway adds it).',
      },
      {
        key: 'enabled',
        label: 'Enabled',
        kind: 'check',
        explicit: true,
        types: ALL_TYPES,
        hint: 'Off keeps it configured but unused.',
      },
    ],
  },
  {
    id: 'credentials',
    legend: 'Credentials',
    fields: [
      {
        key: 'api_key',
        label: 'API key',
        kind: 'secret',
        types: ALL_TYPES,
        hint: "Sent as the backend's credential. Write-only: leave blank to keep the key in force.",
      },
      {
        key: 'auth_mode',
        label: 'Auth mode',
        kind: 'select',
        types: AUTH_MODE,
        hint: 'How the key is sent to Anthropic.',
        options: [
          { value: '', label: 'api_key: x-api-key header (default)' },
          { value: 'api_key', label: 'api_key' },
          { value: 'subscription', label: 'subscription: a `claude setup-token` token (Bearer + OAuth beta)' },
        ],
      },
    ],
  },
  {
    id: 'capacity',
    legend: 'Capacity and placement',
    fields: [
      {
        key: 'max_concurrent',
        label: 'Max concurrent',
        kind: 'number',
        integer: true,
        types: ALL_TYPES,
        placeholder: 'global default',
        hint: 'In-flight cap; 0 = unlimited; blank = the global max_concurrent (ComfyUI: 1).',
      },
      {
        key: 'paid',
        label: 'Paid',
        kind: 'check',
        explicit: true,
        types: ALL_TYPES,
        hint: 'Costs money: used only when no free backend can take the call.',
      },
      {
        key: 'pricing',
        label: 'Prices',
        kind: 'json',
        types: LLM,
        placeholder: '{"gpt-4o*": {"input": 2.5, "output": 10, "cache_read": 1.25}}',
        hint:
          'JSON: USD per million tokens by model id or glob (the exact id, else the longest pattern). ' +
          'Wins over the prices the backend lists and the built-in table.',
      },
      {
        key: 'host',
        label: 'Host',
        kind: 'text',
        types: ALL_TYPES,
        placeholder: 'gpu1',
        hint: 'Label of the physical machine; backends on one host share a GPU.',
      },
      {
        key: 'gpu_group',
        label: 'GPU group',
        kind: 'text',
        types: ALL_TYPES,
        placeholder: 'gpu1',
        hint: 'A GPU shared with other backends: a call or job also needs a free slot on the group.',
      },
    ],
  },
  {
    id: 'models',
    legend: 'Model listing',
    fields: [
      {
        key: 'local',
        label: 'Local',
        kind: 'check',
        explicit: true,
        types: LLM,
        hint: 'Also list its models under their bare ids.',
      },
      {
        key: 'chat_only',
        label: 'Chat models only',
        kind: 'check',
        explicit: true,
        types: LLM,
        hint: 'Drop embeddings, TTS and image models from its list.',
      },
      {
        key: 'serverless_only',
        label: 'Serverless only',
        kind: 'check',
        explicit: true,
        types: LLM,
        hint: 'List only models served serverless (Together).',
      },
      {
        key: 'models',
        label: 'Models',
        kind: 'lines',
        types: LLM,
        placeholder: 'claude-sonnet-4-5',
        hint: 'One id per line: served when the backend will not list its own (401/403/404 on /v1/models).',
      },
    ],
  },
  {
    id: 'requests',
    legend: 'Requests',
    fields: [
      {
        key: 'responses',
        label: 'Responses API',
        kind: 'select',
        types: OPENAI,
        hint: 'native: the backend speaks /v1/responses itself (passed through).',
        options: [
          { value: '', label: 'translate to chat completions (default)' },
          { value: 'translate', label: 'translate' },
          { value: 'native', label: 'native' },
        ],
      },
      {
        key: 'prompt_cache',
        label: 'Prompt cache breakpoints',
        kind: 'check',
        types: OPENAI,
        hint: 'Keep cache_control on translated /v1/messages calls (OpenRouter forwards it to Claude and Gemini).',
      },
      {
        key: 'reasoning_as_content',
        label: 'Reasoning as content',
        kind: 'select',
        types: OPENAI,
        hint: 'For clients that show only content.',
        options: [
          { value: '', label: 'off (default)' },
          { value: 'think_tags', label: 'think_tags: reasoning as <think>…</think>' },
        ],
      },
      {
        key: 'sampling_defaults',
        label: 'Sampling defaults',
        kind: 'json',
        types: OPENAI,
        placeholder: '{"temperature": 0.6, "top_k": 20}',
        hint: 'JSON: request fields filled in when neither the client nor the alias set them.',
      },
    ],
  },
  {
    id: 'comfyui',
    legend: 'ComfyUI',
    fields: [
      {
        key: 'stuck_after_s',
        label: 'Stuck after (s)',
        kind: 'number',
        types: COMFY,
        placeholder: '90',
        hint:
          `${seconds('stuck_after_s')}. The same prompt pending with an idle executor this long ` +
          `marks the box down (exec_stuck).`,
      },
      {
        key: 'poll_interval',
        label: 'Poll interval (s)',
        kind: 'number',
        types: COMFY,
        placeholder: '1',
        hint: `${seconds('poll_interval')}. Seconds between /history polls of a running prompt.`,
      },
      {
        key: 'max_wait',
        label: 'Max wait (s)',
        kind: 'number',
        types: COMFY,
        placeholder: '600',
        hint: `${seconds('max_wait')}. A prompt running longer is interrupted and the job fails over.`,
      },
      {
        key: 'read_timeout',
        label: 'Read timeout (s)',
        kind: 'number',
        types: COMFY,
        placeholder: '60',
        hint: `${seconds('read_timeout')}. Longest one HTTP call to the box may take.`,
      },
      {
        key: 'disconnect_grace',
        label: 'Disconnect grace (s)',
        kind: 'number',
        types: COMFY,
        placeholder: '30',
        hint: `${seconds('disconnect_grace')}. The box may be unreachable this long during a job.`,
      },
      {
        key: 'auto_restart',
        label: 'Auto restart',
        kind: 'check',
        types: COMFY,
        hint: 'Reboot a stuck box through ComfyUI-Manager (security_level middle or below).',
      },
      {
        key: 'restart_cooldown_s',
        label: 'Restart cooldown (s)',
        kind: 'number',
        types: COMFY,
        placeholder: '600',
        hint: `${seconds('restart_cooldown_s')}. At most one auto restart in this many seconds.`,
      },
    ],
  },
];

export const FIELDS: readonly FieldMeta[] = FIELD_GROUPS.flatMap((g) => g.fields);
export const FIELD_KEYS: ReadonlySet<string> = new Set(FIELDS.map((f) => f.key));
