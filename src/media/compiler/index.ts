/**
 * The workflow compiler: ComfyUI API-format workflows + generation aliases → prompts to queue.
 * Pure functions over plain data; the HTTP, upload and queue work lives elsewhere.
 */
export { compile, effectiveMapping, fileKindsOf, fileParamsOf, type ResolvedEntry } from './compile.ts';
export { validateAlias } from './validate.ts';
export { suggestMapping, paramFromTitle } from './suggest.ts';
export { installedLoras } from './inventory.ts';
export { isLoraParam } from './lora-params.ts';
export { loraSlots, RGTHREE_STACK, type LoraSlot } from './loras.ts';
export { fileKindOf, isFileInput, isImageLoaderClass, type FileKind } from './object-info.ts';
export { outputKind, outputNodes, isOutputClass, type OutputKind } from './outputs.ts';
export { writeJson } from './values.ts';
export { PLACEHOLDER_IMAGE_NAME, PLACEHOLDER_PNG_BASE64, placeholderPng } from './placeholder.ts';
export { isLink } from './types.ts';
export type {
  CompileContext,
  CompileError,
  CompileRequest,
  CompileResult,
  GenerationAlias,
  Link,
  Mapping,
  MappingEntry,
  NodeClassInfo,
  ObjectInfo,
  OnEmpty,
  Pin,
  Problem,
  Severity,
  Upload,
  Workflow,
  WorkflowNode,
} from './types.ts';
