import { describe, expect, it } from 'vitest';
import { LineCounter, parseAllDocuments } from 'yaml';
import { positionAt } from '../formats/yaml-source.ts';
import { frameOffset, parseFast } from './fast-positions.ts';
import { benchInputs } from './lint-bench.ts';

/** Every path to a node of `v`, plus one missing child under each mapping and sequence. */
function paths(v: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (Array.isArray(v)) {
    v.forEach((x, i) => paths(x, [...prefix, i], out));
    out.push([...prefix, v.length]);
  } else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) paths(x, [...prefix, k], out);
    out.push([...prefix, 'no-such-field', 'deeper']);
  }
  return out;
}

function lineCol(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const nl = before.lastIndexOf('\n');
  return { line: before.split('\n').length, column: offset - nl };
}

/** Compares the frame position with yaml's for every path; returns how many paths the frames could not place. */
function compare(text: string): { unplaced: number; placed: number } {
  const fast = parseFast(text, 256);
  if (fast === null) throw new Error(`js-yaml refused:\n${text}`);
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines });
  expect(docs.length).toBe(fast.values.length);
  let unplaced = 0;
  let placed = 0;
  fast.values.forEach((value, d) => {
    const doc = docs[d];
    const root = fast.roots[d];
    if (doc === undefined || root === undefined) throw new Error('document count');
    expect(value).toEqual(doc.toJS());
    // An empty document holds no object: lint never places anything in it.
    if (value === null) return;
    for (const p of paths(value)) {
      const at = frameOffset(text, root, p);
      if (at === null) {
        unplaced++;
        continue;
      }
      placed++;
      expect(lineCol(text, at), `${JSON.stringify(p)} in\n${text}`).toEqual(positionAt(doc, lines, p, { key: true }));
    }
  });
  return { unplaced, placed };
}

describe('parseFast', () => {
  it('reads nesting up to the limit it is given (js-yaml alone stops at 100) and refuses deeper', () => {
    const nested = (n: number): string => `${'['.repeat(n)}1${']'.repeat(n)}\n`;
    expect(parseFast(nested(200), 256)?.values).toHaveLength(1);
    expect(parseFast(nested(300), 256)).toBeNull();
    expect(parseFast('a: [\n', 256)).toBeNull();
    expect(parseFast('a: 1\na: 2\n', 256)).toBeNull();
  });
});

describe('frameOffset', () => {
  it('places every node of realistic manifests exactly where yaml does (and never gives up on them)', () => {
    let placed = 0;
    for (const s of benchInputs(100, 3)) {
      const r = compare(s.text as string);
      expect(r.unplaced, s.file).toBe(0);
      placed += r.placed;
    }
    expect(placed).toBeGreaterThan(5_000);
  });

  it('agrees with yaml on odd but valid YAML, or leaves the node to yaml', () => {
    const odd = [
      'a: [1, [2, 3], {b: c}]\nd: {e: [], f: {}}\ng:\nh: ~\n',
      '# c\n---\n  a: 1\n  b:\n    - x\n    -   y\n--- !!map\nc: 2\n',
      'k: |\n  block\n  text\nl: >-\n  folded\nm: "q: uoted"\n\'n o\': 1\n3: three\n',
      '- - a\n  - b\n- - - c\n- {x: 1}\n- k: v\n  k2: v2\n',
      'a: # comment\n  # another\n  b: 1 # trailing\nc:\n  # before item\n  - 1\n',
      'a: [\n  1,\n  2\n]\nb: {\n  c: d }\n',
      'apiVersion: v1\r\nkind: Pod\r\nspec:\r\n  containers:\r\n  - name: c\r\n',
      '? explicit\n: value\nplain: x\n',
      '{"json": {"nested": [1, 2, {"x": null}]}, "b": true}\n',
      'a: 1\n---\n---\nb: 2\n...\n---\nc: [x]\n',
      'empty: ""\nsq: \'\'\nnum: 0x1F\nf: .inf\nn: .nan\nbool: True\n',
    ];
    for (const t of odd) compare(t);
  });
});
