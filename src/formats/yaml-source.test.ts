import { describe, expect, it } from 'vitest';
import { LineCounter, parseAllDocuments } from 'yaml';
import { fieldName, issueAt, parseYaml, pointerToPath, positionAt, type YamlSource } from './yaml-source.ts';

function parsed(text: string): YamlSource {
  const r = parseYaml('f.yaml', text);
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

describe('fieldName', () => {
  it('writes indices in brackets and keys with dots', () => {
    expect(fieldName(['nodes', 3, 'shape'])).toBe('nodes[3].shape');
    expect(fieldName(['shapes', 'my-l40s', 'gpu', 'computeCapability'])).toBe('shapes.my-l40s.gpu.computeCapability');
    expect(fieldName(['gangs', '0', 'pod', 'gpu'])).toBe('gangs[0].pod.gpu');
    expect(fieldName(['topology', 'nvlinkIslands', 0])).toBe('topology.nvlinkIslands[0]');
    expect(fieldName([])).toBe('');
  });
});

describe('pointerToPath', () => {
  it('splits a JSON pointer, turning digits into indices and unescaping ~1 and ~0', () => {
    expect(pointerToPath('/nodes/3/shape')).toEqual(['nodes', 3, 'shape']);
    expect(pointerToPath('/a~1b/c~0d')).toEqual(['a/b', 'c~d']);
    expect(pointerToPath('')).toEqual([]);
    expect(pointerToPath('/')).toEqual([]);
  });
});

describe('issueAt', () => {
  const src = parsed('nodes:\n  - name: a\n    shape: l4x8\n  - {name: b}\n');

  it('points at the value at the path (1-based line and column)', () => {
    expect(issueAt(src, ['nodes', 0, 'shape'], 'm')).toEqual({ file: 'f.yaml', line: 3, column: 12, field: 'nodes[0].shape', message: 'm' });
    expect(issueAt(src, ['nodes', 1], 'm')).toMatchObject({ line: 4, column: 5 });
  });

  it('falls back to the nearest existing parent for a field that is not there', () => {
    expect(issueAt(src, ['nodes', 1, 'shape'], 'missing')).toEqual({ file: 'f.yaml', line: 4, column: 5, field: 'nodes[1].shape', message: 'missing' });
    expect(issueAt(src, ['nope', 'deeper'], 'x')).toMatchObject({ line: 1, column: 1, field: 'nope.deeper' });
  });
});

describe('positionAt', () => {
  const lines = new LineCounter();
  const docs = parseAllDocuments('a: 1\n---\nspec:\n  env:\n    - name: X\n      value: "1"\n  3: three\n  alias: *nope\n', { lineCounter: lines });
  const doc = docs[1];
  if (doc === undefined || !('errors' in doc)) throw new Error('no second document');

  it('points at the key of a map entry with key, at the value without, across a stream', () => {
    expect(positionAt(doc, lines, ['spec', 'env', 0, 'value'], { key: true })).toEqual({ line: 6, column: 7 });
    expect(positionAt(doc, lines, ['spec', 'env', 0, 'value'])).toEqual({ line: 6, column: 14 });
    expect(positionAt(doc, lines, ['spec', 'env', 0])).toEqual({ line: 5, column: 7 });
    expect(positionAt(doc, lines, [])).toEqual({ line: 3, column: 1 });
  });

  it('falls back to the deepest node that exists; a number matches a map key written as that number', () => {
    expect(positionAt(doc, lines, ['spec', 'env', 5, 'name'], { key: true })).toEqual({ line: 4, column: 3 });
    expect(positionAt(doc, lines, ['spec', 3], { key: true })).toEqual({ line: 7, column: 3 });
    expect(positionAt(doc, lines, ['spec', 'env', 'x'], { key: true })).toEqual({ line: 4, column: 3 });
  });
});
