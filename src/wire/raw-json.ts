/**
 * Byte-preserving edits of a JSON request body's top-level members.
 *
 * The gateway forwards the client's body to the backend as the client wrote it and only sets a
 * few top-level fields (`model`, `stream_options`, …). Parsing and re-serialising would round
 * big number literals (`"seed": 12345678901234567891`), turn `-0` into `0` and `1e400` into
 * `null`, and lose whitespace and unicode escapes; so these helpers work on the text instead.
 * One scanner walks the top-level members of the object, skipping strings and nested values by
 * bracket counting, and edits splice new value text into the original.
 *
 * Pure, no I/O. `editTopLevel` and `topLevelValueText` expect text JSON.parse accepted;
 * `nestingDepthExceeds` takes any text (it is the guard run before parsing).
 */

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const LBRACE = 0x7b; // {
const RBRACE = 0x7d; // }
const LBRACKET = 0x5b; // [
const RBRACKET = 0x5d; // ]
const COMMA = 0x2c; // ,
const COLON = 0x3a; // :
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;

/**
 * Index just past the closing quote of the string whose opening quote is at `open`, or -1 when
 * it is not closed. Jumps from quote to quote with indexOf (native, no allocation; about four
 * times a charCode loop on chat bodies, which are mostly string content); a quote after an odd
 * run of backslashes is escaped. Linear: each backslash run is looked at once, from its quote.
 */
/** The deepest nesting of a JSON body the gateway accepts (a guard against stack-deep parsing). */
export const MAX_JSON_DEPTH = 256;

export function stringEnd(text: string, open: number): number {
  for (let from = open + 1; ;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let b = quote - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--;
    if (((quote - 1 - b) & 1) === 0) return quote + 1;
    from = quote + 1;
  }
}

/**
 * True when arrays/objects in `text` nest deeper than `limit` levels (`{}` is depth 1, `[[]]` 2,
 * a scalar 0). Brackets inside strings do not count; `\"` does not end a string. One pass over
 * the characters (strings jumped with stringEnd), no allocation; stops at the first level past
 * the limit. For text that is not JSON the answer is only a best effort (a stray closer never
 * makes the depth negative; an unclosed string ends the scan).
 */
export function nestingDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end < 0) return false;
      i = end - 1;
    } else if (c === LBRACE || c === LBRACKET) {
      if (++depth > limit) return true;
    } else if ((c === RBRACE || c === RBRACKET) && depth > 0) {
      depth--;
    }
  }
  return false;
}

/** One top-level member: `text.slice(keyStart, keyEnd)` is the quoted key, `[valueStart, valueEnd)` its value. */
interface Member {
  keyStart: number;
  keyEnd: number;
  valueStart: number;
  valueEnd: number;
}

interface Scan {
  members: Member[];
  /** Index of the object's closing brace. */
  close: number;
}

function malformed(what: string, at: number): SyntaxError {
  return new SyntaxError(`raw-json: ${what} at offset ${at}`);
}

function skipWhitespace(text: string, i: number): number {
  for (let n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c !== SPACE && c !== LF && c !== CR && c !== TAB) break;
  }
  return i;
}

/** `i` is at an opening quote; returns the index just past the closing one. */
function skipString(text: string, i: number): number {
  const end = stringEnd(text, i);
  if (end < 0) throw malformed('unterminated string', i);
  return end;
}

/** `i` is at the first character of a value; returns the index just past it. */
function skipValue(text: string, i: number): number {
  const n = text.length;
  const first = text.charCodeAt(i);
  if (first === QUOTE) return skipString(text, i);
  if (first === LBRACE || first === LBRACKET) {
    let depth = 0;
    for (let j = i; j < n; j++) {
      const c = text.charCodeAt(j);
      if (c === QUOTE) {
        j = skipString(text, j) - 1;
      } else if (c === LBRACE || c === LBRACKET) {
        depth++;
      } else if (c === RBRACE || c === RBRACKET) {
        if (--depth === 0) return j + 1;
      }
    }
    throw malformed('unterminated value', i);
  }
  // number, true, false, null: up to the next delimiter
  let j = i;
  for (; j < n; j++) {
    const c = text.charCodeAt(j);
    if (c === COMMA || c === RBRACE || c === RBRACKET || c === SPACE || c === LF || c === CR || c === TAB) break;
  }
  if (j === i) throw malformed('missing value', i);
  return j;
}

/** The top-level members of the object `text`, in order (duplicates included). */
function scanMembers(text: string): Scan {
  let i = skipWhitespace(text, 0);
  if (text.charCodeAt(i) !== LBRACE) throw malformed('expected a JSON object', i);
  const members: Member[] = [];
  i = skipWhitespace(text, i + 1);
  if (text.charCodeAt(i) === RBRACE) return { members, close: i };
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) throw malformed('expected a member name', i);
    const keyStart = i;
    const keyEnd = skipString(text, i);
    i = skipWhitespace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) throw malformed("expected ':'", i);
    const valueStart = skipWhitespace(text, i + 1);
    const valueEnd = skipValue(text, valueStart);
    members.push({ keyStart, keyEnd, valueStart, valueEnd });
    i = skipWhitespace(text, valueEnd);
    const c = text.charCodeAt(i);
    if (c === RBRACE) return { members, close: i };
    if (c !== COMMA) throw malformed("expected ',' or '}'", i);
    i = skipWhitespace(text, i + 1);
  }
}

/** The decoded name of a member (`"mo\u0064el"` → `model`). */
function memberName(text: string, m: Member): string {
  const inner = text.slice(m.keyStart + 1, m.keyEnd - 1);
  return inner.indexOf('\\') < 0 ? inner : (JSON.parse(text.slice(m.keyStart, m.keyEnd)) as string);
}

/**
 * The raw text of the value of top-level member `key` (its first occurrence; names compared
 * decoded), or undefined when `text` has no such member. `text` must be a JSON object.
 */
export function topLevelValueText(text: string, key: string): string | undefined {
  for (const m of scanMembers(text).members) {
    if (memberName(text, m) === key) return text.slice(m.valueStart, m.valueEnd);
  }
  return undefined;
}

interface Splice {
  start: number;
  end: number;
  insert: string;
}

/**
 * `text` (a JSON object, already accepted by JSON.parse) with some top-level members set or
 * removed, every other character kept as it was (whitespace, key order, number literals, escapes).
 *
 * `edits` maps a member name (decoded) to its new value as raw JSON text, or to null to remove
 * the member. The values are not checked: they must be valid JSON. A member present in `text`
 * gets its value replaced where it stands; when an edited name occurs several times, only the
 * first occurrence stays (replaced) and the later ones go, with their commas. Names not present
 * are appended before the closing brace as `,"name":value`. Returns `text` itself when nothing
 * changes. Throws a SyntaxError when `text` is not an object.
 */
export function editTopLevel(text: string, edits: ReadonlyMap<string, string | null>): string {
  if (edits.size === 0) return text;
  const { members, close } = scanMembers(text);
  const splices: Splice[] = [];
  const seen = new Set<string>();
  let lastKept = -1;
  for (let k = 0; k < members.length; k++) {
    const m = members[k];
    const name = memberName(text, m);
    const edit = edits.get(name);
    if (edit === undefined) {
      lastKept = k;
      continue;
    }
    const first = !seen.has(name);
    seen.add(name);
    if (edit !== null && first) {
      lastKept = k;
      const same = m.valueEnd - m.valueStart === edit.length && text.startsWith(edit, m.valueStart);
      if (!same) splices.push({ start: m.valueStart, end: m.valueEnd, insert: edit });
      continue;
    }
    // Removal. After a kept member: from the end of the previous value (so its comma goes too)
    // to the end of this one. Before any kept member: from this name to the next name.
    if (lastKept >= 0) splices.push({ start: members[k - 1].valueEnd, end: m.valueEnd, insert: '' });
    else
      splices.push({
        start: m.keyStart,
        end: k + 1 < members.length ? members[k + 1].keyStart : m.valueEnd,
        insert: '',
      });
  }

  const added: string[] = [];
  for (const [name, value] of edits) {
    if (value !== null && !seen.has(name)) added.push(`${JSON.stringify(name)}:${value}`);
  }
  if (added.length > 0) {
    const body = added.join(',');
    if (lastKept >= 0) {
      const at = members[lastKept].valueEnd;
      splices.push({ start: at, end: at, insert: `,${body}` });
    } else {
      const at = members.length > 0 ? members[0].keyStart : close;
      splices.push({ start: at, end: at, insert: body });
    }
  }
  if (splices.length === 0) return text;

  // Splices never overlap; an insertion sorts before a removal starting at the same index.
  splices.sort((a, b) => a.start - b.start || a.end - b.end);
  let out = '';
  let pos = 0;
  for (const s of splices) {
    out += text.slice(pos, s.start) + s.insert;
    pos = s.end;
  }
  return out + text.slice(pos);
}
