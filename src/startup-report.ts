/**
 * What start-up says about where things are (pure): the console's and the API's URLs for the
 * address the server is bound to, and, on a terminal, which backends answered the first
 * discovery round. The lines are plain text; server.ts logs them.
 */
import type { BackendState } from './backends/registry.ts';
import type { MediaInventory } from './media/compiler/inventory.ts';
import { kindOf } from './backends/kinds/index.ts';

/** The base URL a client on this machine uses for a bound address (a wildcard means localhost). */
export function baseUrl(address: string, port: number): string {
  const host = address === '0.0.0.0' || address === '::' ? 'localhost' : address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** One line: where the console and the API are. */
export function whereLine(address: string, port: number): string {
  const base = baseUrl(address, port);
  return `console ${base}/ui · API ${base}/v1 (Anthropic clients: base URL ${base})`;
}

export interface FleetReportView {
  backends(): readonly BackendState[];
  mediaInventory(backend: string): MediaInventory | undefined;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

function stateOf(b: BackendState, inventory: MediaInventory | undefined): { word: string; what: string } {
  if (!b.spec.enabled) return { word: 'off', what: 'disabled' };
  if (!b.healthy) {
    const status = b.error?.status ? ` (${b.error.status})` : '';
    return { word: 'down', what: b.error ? `${b.error.kind}${status}: ${oneCode(b.error.detail)}` : 'no answer yet' };
  }
  if (kindOf(b.spec).isMedia) {
    if (!inventory) return { word: 'up', what: 'ComfyUI' };
    const files = plural(inventory.checkpoints.length + inventory.unets.length, 'model file');
    return { word: 'up', what: `ComfyUI, ${files}, ${plural(inventory.loras.length, 'LoRA')}` };
  }
  return { word: 'up', what: plural(b.models.length, 'model') };
}

/** "ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:8080" → "connect ECONNREFUSED 127.0.0.1:8080". */
function oneCode(detail: string): string {
  return detail.replace(/^([A-Z][A-Z_]+): (?=.*\b\1\b)/, '');
}

/** A heading and one line per backend: up with its model count, down with the reason, or off. */
export function fleetLines(view: FleetReportView): string[] {
  const backends = view.backends();
  if (backends.length === 0) {
    return ['no backends configured: add some to config.yaml or in the console (/ui/backends)'];
  }
  const enabled = backends.filter((b) => b.spec.enabled);
  const up = enabled.filter((b) => b.healthy).length;
  const width = Math.max(...backends.map((b) => b.name.length));
  const lines = [`backends: ${up} of ${enabled.length} answered`];
  for (const b of backends) {
    const { word, what } = stateOf(b, view.mediaInventory(b.name));
    lines.push(`  ${word.padEnd(4)} ${b.name.padEnd(width)}  ${what}`);
  }
  return lines;
}
