/**
 * Reading `/object_info`: what type an input has, whether it is required, what a combo allows,
 * which classes are output nodes. Both combo spellings are read
 * (combo.ts): the legacy `[[option, …], {…}]` and the newer `["COMBO", { options: […] }]`.
 */
import { comboChoices } from './combo.ts';
import type { InputSpec, NodeClassInfo, ObjectInfo } from './types.ts';

/** How a widget value is typed; `socket` is a link-only input (MODEL, IMAGE, …). */
export type ValueKind = 'INT' | 'FLOAT' | 'BOOLEAN' | 'STRING' | 'COMBO' | 'socket';

export interface InputDecl {
  name: string;
  /** The declared type name (`INT`, `IMAGE`, `COMBO`, …); `COMBO` for a legacy list. */
  type: string;
  kind: ValueKind;
  required: boolean;
  options: Record<string, unknown>;
  /** A combo's choices (possibly empty: a server with no LoRAs lists none). */
  choices?: unknown[];
}

const WIDGET_KINDS = new Set(['INT', 'FLOAT', 'BOOLEAN', 'STRING', 'COMBO']);

export function classInfo(objectInfo: ObjectInfo | undefined, classType: string): NodeClassInfo | undefined {
  if (!objectInfo || !Object.hasOwn(objectInfo, classType)) return undefined;
  return objectInfo[classType];
}

function declOf(name: string, spec: InputSpec, required: boolean): InputDecl {
  const [head, opts] = spec;
  const options = (opts ?? {}) as Record<string, unknown>;
  const choices = comboChoices(spec);
  if (choices) return { name, type: 'COMBO', kind: 'COMBO', required, options, choices };
  const type = typeof head === 'string' ? head : String(head);
  return { name, type, kind: WIDGET_KINDS.has(type) ? (type as ValueKind) : 'socket', required, options };
}

/** The declaration of `field` on a class, or undefined when the class does not declare it. */
export function inputDecl(info: NodeClassInfo, field: string): InputDecl | undefined {
  const req = info.input?.required;
  if (req && Object.hasOwn(req, field)) return declOf(field, req[field], true);
  const opt = info.input?.optional;
  if (opt && Object.hasOwn(opt, field)) return declOf(field, opt[field], false);
  return undefined;
}

/** Every declared input, required first, in `input_order` where the dump has it. */
export function inputDecls(info: NodeClassInfo): InputDecl[] {
  const out: InputDecl[] = [];
  for (const group of ['required', 'optional'] as const) {
    const specs = info.input?.[group] ?? {};
    const order = info.input_order?.[group] ?? Object.keys(specs);
    for (const name of order) if (Object.hasOwn(specs, name)) out.push(declOf(name, specs[name], group === 'required'));
  }
  return out;
}

/** Does a value of type `a` fit a socket of type `b`? `*` is ComfyUI's any; `A,B` is a union. */
export function typesMatch(a: string, b: string): boolean {
  if (a === '*' || b === '*') return true;
  const left = a.split(',');
  return b.split(',').some((t) => left.includes(t));
}

/** An image loader: `LoadImage`, `LoadImageMask`, and any custom class with `LoadImage` in its name. */
export function isImageLoaderClass(classType: string): boolean {
  return classType.includes('LoadImage');
}

/**
 * An input a request may send a file for (the file is uploaded and its name written there):
 * any field of an image loader class; else a text or combo input whose declaration carries an
 * upload flag (`image_upload`, `audio_upload`, `video_upload`, any `*_upload: true`) or, when
 * the flags say nothing, of a class named `Load…` (LoadAudio, VHS_LoadVideo, Trellis2LoadMesh;
 * not the model `…Loader`s, whose files are installed on the box, never uploaded). A number
 * or boolean widget never takes a file.
 */
export function isFileInput(classType: string, decl: InputDecl | undefined): boolean {
  if (isImageLoaderClass(classType)) return true;
  if (decl && decl.kind !== 'COMBO' && decl.kind !== 'STRING') return false;
  if (decl && Object.entries(decl.options).some(([key, value]) => key.endsWith('_upload') && value === true))
    return true;
  return /Load(?!er)/.test(classType);
}

/** The media a file input loads, as far as its class or upload flag tells. */
export type FileKind = 'image' | 'audio' | 'video';

/**
 * What a file input (isFileInput) loads: an image for an image loader class or an
 * `image_upload` flag; audio for `audio_upload` or a class named …Audio…; video for
 * `video_upload` or …Video…; undefined when nothing tells (a mesh, a custom loader).
 */
export function fileKindOf(classType: string, decl: InputDecl | undefined): FileKind | undefined {
  if (isImageLoaderClass(classType) || decl?.options.image_upload === true) return 'image';
  if (decl?.options.audio_upload === true || /audio/i.test(classType)) return 'audio';
  if (decl?.options.video_upload === true || /video/i.test(classType)) return 'video';
  return undefined;
}

export function isMaskLoaderClass(classType: string): boolean {
  return classType.includes('LoadImageMask');
}
