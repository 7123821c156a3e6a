/** The ComfyUI workflows and object_info dump under test/fixtures/comfyui. */
import { readFixtureJson } from './fixtures.ts';
import type { ObjectInfo, Workflow } from '../../src/media/compiler/index.ts';

export function workflow(name: string): Workflow {
  return readFixtureJson<Workflow>(`comfyui/workflows/${name}`);
}

let cached: ObjectInfo | undefined;
export function objectInfo(): ObjectInfo {
  cached ??= readFixtureJson<ObjectInfo>('comfyui/object_info.json');
  return cached;
}

/** A fixed `random()` so that random seeds are predictable. */
export const half = () => 0.5;
