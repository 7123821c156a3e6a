/**
 * Which nodes make the answer, and what kind of file each makes. object_info's
 * `output_node: true` decides when the server described the class; otherwise a list of the
 * output classes the gateway's workflows use (core and the custom mesh/video nodes).
 */
import { classInfo } from './object-info.ts';
import { sortedIds } from './graph.ts';
import type { ObjectInfo, Workflow } from './types.ts';

export type OutputKind = 'image' | 'video' | 'audio' | 'mesh' | 'other';

const KNOWN_OUTPUTS: Record<string, OutputKind> = {
  SaveImage: 'image',
  PreviewImage: 'image',
  SaveAnimatedWEBP: 'image',
  SaveAnimatedPNG: 'image',
  SaveImageWebsocket: 'image',
  SaveSVGNode: 'image',
  MaskPreview: 'image',
  SaveVideo: 'video',
  SaveWEBM: 'video',
  VHS_VideoCombine: 'video',
  SaveAudio: 'audio',
  SaveAudioMP3: 'audio',
  SaveAudioOpus: 'audio',
  PreviewAudio: 'audio',
  SaveGLB: 'mesh',
  Preview3D: 'mesh',
  Preview3DAnimation: 'mesh',
  Trellis2ExportMesh: 'mesh',
  Hy3D21ExportMesh: 'mesh',
  UniRigPreviewRiggedMesh: 'mesh',
};

/** The kind of file a class writes: the list above, else a guess from its name. */
export function outputKind(classType: string): OutputKind {
  if (Object.hasOwn(KNOWN_OUTPUTS, classType)) return KNOWN_OUTPUTS[classType];
  if (/video|webm|mp4|gif/i.test(classType)) return 'video';
  if (/audio|mp3|flac|opus|wav/i.test(classType)) return 'audio';
  if (/glb|fbx|obj|mesh|3d|rig/i.test(classType)) return 'mesh';
  if (/image|png|webp|jpe?g/i.test(classType)) return 'image';
  return 'other';
}

export function isOutputClass(classType: string, objectInfo: ObjectInfo | undefined): boolean {
  const info = classInfo(objectInfo, classType);
  if (info) return info.output_node === true;
  return Object.hasOwn(KNOWN_OUTPUTS, classType);
}

/** Every output node of the graph, in id order. */
export function outputNodes(workflow: Workflow, objectInfo: ObjectInfo | undefined): string[] {
  return sortedIds(Object.keys(workflow).filter((id) => isOutputClass(workflow[id].class_type, objectInfo)));
}
