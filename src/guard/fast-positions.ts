/**
 * Positions for the js-yaml fast path of `sits lint` (ADR 0045): js-yaml reports every node it composes through
 * its `listener` option (open at the node, close with the node's value and kind), which gives a tree of node
 * start offsets ~15× faster than composing the document with `yaml`. The tree is checked against the values
 * as it is walked; whenever it does not match (a js-yaml quirk this code does not know), the caller asks `yaml`.
 */
import { CORE_SCHEMA, loadAll, type LoadOptions } from 'js-yaml';
import type { FieldPath } from './rule.ts';

export interface Frame {
  /** Offset where js-yaml started composing the node (whitespace before it included). */
  readonly open: number;
  kind: string | null;
  result: unknown;
  readonly children: Frame[];
}

export interface FastParse {
  readonly values: unknown[];
  /** The root frame of every document, in the order of `values`. */
  readonly roots: Frame[];
}

/** Values and node frames of every document of `text`; null for a text js-yaml refuses (any error). */
export function parseFast(text: string, maxDepth: number): FastParse | null {
  const roots: Frame[] = [];
  const stack: Frame[] = [];
  let values: unknown[];
  try {
    const options: LoadOptions & { maxDepth: number } = {
      schema: CORE_SCHEMA,
      // js-yaml's own nesting limit (default 100, not in its types); ours is checked below.
      maxDepth: maxDepth + 2,
      listener: (event, state) => {
        if (event === 'open') {
          stack.push({ open: state.position, kind: null, result: undefined, children: [] });
          // js-yaml recurses per level: stop before the stack does (the exact path reports the limit).
          if (stack.length > maxDepth) throw new RangeError('too deep');
          return;
        }
        const f = stack.pop();
        if (f === undefined) return;
        f.kind = state.kind;
        f.result = state.result;
        const parent = stack.at(-1);
        if (parent === undefined) roots.push(f);
        else parent.children.push(f);
      },
    };
    values = loadAll(text, undefined, options);
  } catch {
    return null;
  }
  return values.length === roots.length ? { values, roots } : null;
}

/**
 * First character of the node a frame opened at: past spaces, line breaks, comments and a tag (`!!map`; a plain
 * scalar cannot start with `!`), where yaml's node range starts.
 */
function nodeStart(text: string, at: number): number {
  let i = at;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
    else if (c === 0x21 /* ! */) {
      while (i < text.length && !/\s/.test(text.charAt(i))) i++;
    } else if (c === 0x23 /* # */) {
      const nl = text.indexOf('\n', i);
      if (nl === -1) return i;
      i = nl + 1;
    } else return i;
  }
}

/**
 * The key and value frames of a mapping, in text order. Keys and values both open frames; a key with an empty
 * value has no value frame, and a frame that is neither (js-yaml tried a key and found none) is skipped.
 */
function pairs(f: Frame): { key: Frame; value: Frame | undefined }[] | null {
  const map = f.result as Record<string, unknown>;
  const out: { key: Frame; value: Frame | undefined }[] = [];
  const cs = f.children;
  for (let i = 0; i < cs.length;) {
    const k = cs[i] as Frame;
    const key = k.kind === 'scalar' && k.result !== null && k.result !== undefined ? String(k.result as string) : undefined;
    if (key === undefined || !Object.hasOwn(map, key)) {
      i++;
      continue;
    }
    const v = cs[i + 1];
    if (v !== undefined && sameValue(v.result, map[key])) {
      out.push({ key: k, value: v });
      i += 2;
    } else if (map[key] === null) {
      out.push({ key: k, value: undefined });
      i += 1;
    } else return null;
  }
  return out.length === Object.keys(map).length ? out : null;
}

/**
 * A node js-yaml first tried as a block mapping key and then kept as the value itself (`key: [1, 2]`) has one
 * child frame with the same value: the frame with the items.
 */
function unwrap(f: Frame): Frame {
  let x = f;
  while (x.children.length === 1 && (x.children[0] as Frame).result === x.result && typeof x.result === 'object' && x.result !== null)
    x = x.children[0] as Frame;
  return x;
}

const sameValue = (a: unknown, b: unknown): boolean => a === b || (typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b));

/**
 * Offset of the deepest node on `path` in the document of `root`, as `positionAt(..., { key: true })` places it:
 * a map entry at its key, a sequence item at the item. Null when the frames do not match the values.
 */
export function frameOffset(text: string, root: Frame, path: FieldPath): number | null {
  let f = unwrap(root);
  let at = nodeStart(text, root.open);
  for (const seg of path) {
    if (f.kind === 'mapping' && f.result !== null && typeof f.result === 'object' && !Array.isArray(f.result)) {
      const ps = pairs(f);
      if (ps === null) return null;
      const p = ps.find((x) => String(x.key.result as string) === String(seg));
      if (p === undefined) break;
      at = nodeStart(text, p.key.open);
      if (p.value === undefined) break;
      f = unwrap(p.value);
    } else if (f.kind === 'sequence' && Array.isArray(f.result)) {
      const items = f.result as unknown[];
      if (f.children.length !== items.length || f.children.some((c, i) => !sameValue(c.result, items[i]))) return null;
      const idx = typeof seg === 'number' ? seg : /^\d+$/.test(seg) ? Number(seg) : -1;
      const c = f.children[idx];
      if (c === undefined) break;
      at = nodeStart(text, c.open);
      f = unwrap(c);
    } else break;
  }
  return at;
}
