/**
 * The one place a backend's `type:` is looked up: `kindOf(spec)` / `descriptorFor(type)` give
 * its descriptor (types.ts), and the helpers below answer the questions callers ask of it.
 * Code elsewhere never compares a spec's type with a literal; a new kind is a new file here.
 */
import type { BackendSpec, BackendType } from '../../config/types.ts';
import { anthropicKind } from './anthropic.ts';
import { comfyuiKind } from './comfyui.ts';
import { ollamaKind } from './ollama.ts';
import { openaiKind } from './openai.ts';
import type { BackendKind, ClientApi } from './types.ts';

export type { BackendKind, ClientApi } from './types.ts';

const KINDS: Readonly<Record<BackendType, BackendKind>> = Object.freeze({
  openai: openaiKind,
  ollama: ollamaKind,
  anthropic: anthropicKind,
  comfyui: comfyuiKind,
});

/** Every kind, in the order the console offers them. */
export const BACKEND_KINDS: readonly BackendKind[] = Object.freeze(Object.values(KINDS));

export function descriptorFor(type: BackendType): BackendKind {
  return KINDS[type];
}

export function kindOf(spec: Pick<BackendSpec, 'type'>): BackendKind {
  return KINDS[spec.type];
}

/**
 * Whether the kind gets `api`'s requests as the client sent them; one it speaks only on request
 * (the Responses API) takes the spec's word (`responses: native`).
 */
export function speaks(kind: BackendKind, api: ClientApi, spec?: Pick<BackendSpec, 'responses'>): boolean {
  if (kind.native.includes(api)) return true;
  return kind.nativeOnRequest.includes(api) && spec?.responses === 'native';
}

/** Whether the kind answers `api` at all: natively, on request, or through a bridge. */
export function answers(kind: BackendKind, api: ClientApi): boolean {
  return kind.native.includes(api) || kind.nativeOnRequest.includes(api) || kind.translated.includes(api);
}

/** The types of the kinds that pass `test`, in table order. */
export function typesWhere(test: (kind: BackendKind) => boolean): BackendType[] {
  return BACKEND_KINDS.filter(test).map((k) => k.type);
}

/** The types of the kinds that answer any of `apis`, in table order. */
export function typesAnswering(apis: readonly ClientApi[]): BackendType[] {
  return typesWhere((k) => apis.some((api) => answers(k, api)));
}

/** Every kind's answers that mean "a model could not start or is still loading" (upstream/classify.ts). */
export const LOAD_ANSWERS: readonly RegExp[] = Object.freeze([...new Set(BACKEND_KINDS.flatMap((k) => k.loadAnswers))]);
