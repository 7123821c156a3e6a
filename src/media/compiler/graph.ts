/**
 * Editing a workflow graph in place: finding nodes, removing a node with everything that can
 * no longer run, and bypassing a node the way ComfyUI's editor does.
 *
 * Removing: a consumer whose REQUIRED input lost its source is removed too, transitively; an
 * optional input is unwired and its node keeps running. Required means `input.required` in
 * object_info. A class object_info does not describe (or no object_info at all) cannot be
 * read, so all of its linked inputs count as required, the safe side: a node that might fail
 * is dropped rather than sent. The notes say when that happened.
 *
 * Bypassing (the editor's mode 4, which the API format has no field for): every consumer of
 * the node's output k is reconnected to the node's input of the same type, preferring the
 * input at position k, else the first that matches. With no matching input the consumer's
 * input is unwired when optional, else the consumer is removed. Where no types are known, a
 * node with a single linked input is taken as a pass-through of it (filters, mesh clean-ups):
 * a guess, recorded in the notes.
 */
import { classInfo, inputDecl, inputDecls, typesMatch } from './object-info.ts';
import { isLink, type Link, type ObjectInfo, type Workflow } from './types.ts';

export interface GraphEdit {
  prompt: Workflow;
  objectInfo?: ObjectInfo;
  removed: string[];
  bypassed: string[];
  notes: Set<string>;
}

/** A node id, else the id of the one node with that `_meta.title`; undefined when none or several. */
export function resolveNode(workflow: Workflow, ref: string): string | undefined {
  if (Object.hasOwn(workflow, ref)) return ref;
  const titled = nodesTitled(workflow, ref);
  return titled.length === 1 ? titled[0] : undefined;
}

export function nodesTitled(workflow: Workflow, title: string): string[] {
  return Object.keys(workflow).filter((id) => workflow[id]._meta?.title === title);
}

/** Node ids in a stable, human order: numeric ids by value, then the rest (`276:119`) as text. */
export function sortedIds(ids: Iterable<string>): string[] {
  return [...ids].sort((a, b) => {
    const na = Number(a);
    const nb = Number(b);
    if (Number.isInteger(na) && Number.isInteger(nb)) return na - nb;
    if (Number.isInteger(na)) return -1;
    if (Number.isInteger(nb)) return 1;
    return a < b ? -1 : a > b ? 1 : 0;
  });
}

interface Consumer {
  node: string;
  field: string;
  link: Link;
}

function consumersOf(prompt: Workflow, source: string): Consumer[] {
  const out: Consumer[] = [];
  for (const [node, n] of Object.entries(prompt)) {
    for (const [field, value] of Object.entries(n.inputs)) {
      if (isLink(value) && value[0] === source) out.push({ node, field, link: value });
    }
  }
  return out;
}

function isRequired(edit: GraphEdit, node: string, field: string): boolean {
  const classType = edit.prompt[node].class_type;
  const info = classInfo(edit.objectInfo, classType);
  if (!info) {
    edit.notes.add(
      edit.objectInfo
        ? `${classType} is not in object_info: its linked inputs are treated as required`
        : 'no object_info: every linked input is treated as required',
    );
    return true;
  }
  // an input the class does not declare (a dynamic one, `values.a`): no way to tell, keep safe
  return inputDecl(info, field)?.required ?? true;
}

/** Removes `ids` and, transitively, every node that needed one of them. */
export function removeWithDependents(edit: GraphEdit, ids: string[]): void {
  const queue = [...ids];
  while (queue.length > 0) {
    const id = queue.shift()!;
    if (!Object.hasOwn(edit.prompt, id)) continue;
    const consumers = consumersOf(edit.prompt, id);
    delete edit.prompt[id];
    edit.removed.push(id);
    for (const c of consumers) {
      if (!Object.hasOwn(edit.prompt, c.node)) continue;
      if (isRequired(edit, c.node, c.field)) {
        if (!queue.includes(c.node)) queue.push(c.node);
      } else delete edit.prompt[c.node].inputs[c.field];
    }
  }
}

/** Bypasses `id` (see the header), then removes whatever could not be reconnected. */
export function bypassNode(edit: GraphEdit, id: string): void {
  if (!Object.hasOwn(edit.prompt, id)) return;
  const lost: string[] = [];
  for (const c of consumersOf(edit.prompt, id)) {
    const source = passThroughSource(edit, id, c);
    if (source) edit.prompt[c.node].inputs[c.field] = [source[0], source[1]];
    else if (isRequired(edit, c.node, c.field)) lost.push(c.node);
    else delete edit.prompt[c.node].inputs[c.field];
  }
  delete edit.prompt[id];
  edit.bypassed.push(id);
  removeWithDependents(edit, lost);
}

interface LinkedInput {
  name: string;
  link: Link;
  type?: string;
}

function passThroughSource(edit: GraphEdit, id: string, consumer: Consumer): Link | undefined {
  const node = edit.prompt[id];
  const inputs = orderedLinkedInputs(edit, id);
  const wanted = inputType(edit, consumer.node, consumer.field) ?? outputType(edit, id, consumer.link[1]);
  if (wanted !== undefined) {
    const same = inputs[consumer.link[1]];
    if (same?.type !== undefined && typesMatch(same.type, wanted)) return same.link;
    const first = inputs.find((i) => i.type !== undefined && typesMatch(i.type, wanted));
    if (first) return first.link;
    if (inputs.every((i) => i.type !== undefined)) return undefined;
  }
  if (inputs.length === 1) {
    edit.notes.add(
      `bypass of ${id} (${node.class_type}): types unknown, its only linked input ` +
        `(${inputs[0].name}) is passed through`,
    );
    return inputs[0].link;
  }
  return undefined;
}

/** Linked inputs in the editor's slot order: declared sockets, then linked widgets, then undeclared inputs. */
function orderedLinkedInputs(edit: GraphEdit, id: string): LinkedInput[] {
  const node = edit.prompt[id];
  const info = classInfo(edit.objectInfo, node.class_type);
  const names: string[] = [];
  if (info) {
    const decls = inputDecls(info);
    names.push(...decls.filter((d) => d.kind === 'socket').map((d) => d.name));
    names.push(...decls.filter((d) => d.kind !== 'socket').map((d) => d.name));
  }
  for (const name of Object.keys(node.inputs)) if (!names.includes(name)) names.push(name);
  const out: LinkedInput[] = [];
  for (const name of names) {
    const value = node.inputs[name];
    if (isLink(value)) out.push({ name, link: value, type: inputType(edit, id, name) });
  }
  return out;
}

/** An input's type: declared by its class, else the declared type of the output feeding it. */
function inputType(edit: GraphEdit, node: string, field: string): string | undefined {
  const n = edit.prompt[node];
  const info = classInfo(edit.objectInfo, n.class_type);
  const decl = info ? inputDecl(info, field) : undefined;
  if (decl) return decl.type;
  const value = n.inputs[field];
  if (isLink(value) && Object.hasOwn(edit.prompt, value[0])) return outputType(edit, value[0], value[1]);
  return undefined;
}

function outputType(edit: GraphEdit, node: string, index: number): string | undefined {
  const info = classInfo(edit.objectInfo, edit.prompt[node].class_type);
  const type = info?.output?.[index];
  return typeof type === 'string' ? type : undefined;
}
