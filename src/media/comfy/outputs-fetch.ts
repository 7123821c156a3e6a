/**
 * A finished prompt's files, fetched from the box: those of the alias's output nodes, the
 * saved (`type: output`) ones when a node also left temporary previews. Each carries the MIME
 * type its bytes show (sniffed), else what the box said, else its extension's. `signal` stops
 * the fetches (the job's cancel and a bound on them).
 */
import type { ComfyHistoryEntry } from './answers.ts';
import type { ComfyClient } from './client.ts';
import { kindOf, mimeOfExt } from '../jobs/artifacts.ts';
import { sniffMime } from '../inputs/sniff.ts';
import type { ResultKind } from '../jobs/job-types.ts';

export interface FetchedOutput {
  bytes: Buffer;
  mime: string;
  kind: ResultKind;
  node: string;
  filename: string;
}

export async function collectOutputs(
  client: ComfyClient,
  entry: ComfyHistoryEntry,
  outputNodes: readonly string[],
  signal?: AbortSignal,
): Promise<{ ok: true; files: FetchedOutput[] } | { ok: false; error: string }> {
  const wanted = new Set(outputNodes);
  let refs = client.outputs(entry).filter((ref) => wanted.has(ref.node));
  if (refs.some((ref) => ref.type === 'output')) refs = refs.filter((ref) => ref.type === 'output');
  const files: FetchedOutput[] = [];
  for (const ref of refs) {
    const viewed = await client.view(ref, { signal });
    if (!viewed.ok) return { ok: false, error: `fetching ${ref.filename} failed: ${viewed.error}` };
    const declared = viewed.contentType.split(';')[0].trim().toLowerCase();
    const ext = ref.filename.includes('.') ? ref.filename.slice(ref.filename.lastIndexOf('.') + 1).toLowerCase() : '';
    const mime =
      sniffMime(viewed.bytes) ?? (declared && declared !== 'application/octet-stream' ? declared : mimeOfExt(ext));
    files.push({ bytes: viewed.bytes, mime, kind: kindOf(mime), node: ref.node, filename: ref.filename });
  }
  return { ok: true, files };
}
