/**
 * `type: comfyui`: a ComfyUI server, for media generation only (no chat models, no token
 * prices). A probe asks `/system_stats`, then ComfyUI's queue and node list decide (media/comfy/);
 * the box runs one prompt at a time, so more in flight would only queue on it, invisible to the
 * scheduler. Its key (a proxy in front of it) goes as a bearer token.
 */
import { bearer } from './openai.ts';
import type { BackendKind } from './types.ts';

export const comfyuiKind: BackendKind = {
  type: 'comfyui',
  isMedia: true,
  probe: { path: '/system_stats', reads: 'comfy-health' },
  native: ['media'],
  nativeOnRequest: [],
  translated: [],
  authHeaders: bearer,
  ownHeaders: () => ({}),
  basicFromUrl: true,
  // the knobs only this kind reads have their defaults in config/defaults.ts (COMFY_DEFAULTS)
  defaults: { max_concurrent: 1 },
  pricedPerToken: false,
  hasAuthMode: false,
  translatesCacheControl: false,
  residency: 'none',
  // POST /free unloads its models when the card goes back to LLM work
  groupSwitch: 'free_media',
  loadAnswers: [],
};
