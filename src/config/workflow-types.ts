/**
 * The shapes of a ComfyUI workflow and of its mapping and pins as the config holds them
 * (media/compiler/ reads them).
 */

/** A link: `[source node id, output index]`. */
export type Link = [string, number];

export interface WorkflowNode {
  class_type: string;
  inputs: Record<string, unknown>;
  _meta?: { title?: string };
}

export type Workflow = Record<string, WorkflowNode>;

/** What a request does when an image slot gets no image. */
export type OnEmpty = 'placeholder' | 'required' | 'disable';

/** Where a request parameter lands. `node` is a node id or, when no id matches, a unique `_meta.title`. */
export interface MappingEntry {
  node: string;
  field: string;
  /** Image slots only; `placeholder` when absent. */
  on_empty?: OnEmpty;
}

export type Mapping = Record<string, MappingEntry>;

/** A value an operator fixes for one backend; no request can change it. */
export interface Pin {
  node: string;
  field: string;
  value: unknown;
}
