import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { Quantity, StringEnum, withRules } from './schema/common.ts';
import { structuralIssues } from './structural-check.ts';
import { resourceStructuralSchema, toStructural } from './structural.ts';

describe('toStructural', () => {
  it('turns a union of literals into a bounded string enum', () => {
    const { root } = toStructural(StringEnum(['a', 'bbb'], { description: 'x. Default: a.', default: 'a' }));
    expect(root).toEqual({ description: 'x. Default: a.', type: 'string', enum: ['a', 'bbb'], default: 'a', maxLength: 3 });
  });

  it('keeps int-or-string as exactly anyOf [integer, string] and hoists its validations', () => {
    const { root } = toStructural(Quantity('q'));
    expect(root.anyOf).toEqual([{ type: 'integer' }, { type: 'string' }]);
    expect(root['x-kubernetes-int-or-string']).toBe(true);
    expect(root.minimum).toBe(0);
    expect(root.pattern).toBeDefined();
    expect(root.maxLength).toBe(64);
    expect(root.type).toBeUndefined();
  });

  it('turns Records into additionalProperties and drops additionalProperties: false', () => {
    const { root } = toStructural(
      Type.Object(
        { m: Type.Record(Type.String(), Type.Integer({ description: 'v' }), { description: 'map', maxProperties: 2 }) },
        { description: 'o', additionalProperties: false },
      ),
    );
    expect(root.properties?.m).toEqual({ description: 'map', type: 'object', maxProperties: 2, additionalProperties: { description: 'v', type: 'integer' } });
    expect(root).not.toHaveProperty('additionalProperties');
    expect(root.required).toEqual(['m']);
  });

  it('keeps preserve-unknown-fields maps untyped inside', () => {
    const { root } = toStructural(Type.Record(Type.String(), Type.Unknown(), { description: 'raw', 'x-kubernetes-preserve-unknown-fields': true }));
    expect(root).toEqual({ description: 'raw', type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
  });

  it('converts numeric exclusive bounds to the OpenAPI v3 boolean form', () => {
    const { root } = toStructural(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 }));
    expect(root).toMatchObject({ type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true });
  });

  it('never requires a field that has a default', () => {
    const { root } = toStructural(Type.Object({ a: Type.Integer({ default: 1 }), b: Type.Integer() }));
    expect(root.required).toEqual(['b']);
  });

  it('drops keywords the apiserver does not know', () => {
    const { root } = toStructural(Type.String({ $id: 'X', title: 'T', examples: ['e'], maxLength: 3 }));
    expect(root).toEqual({ type: 'string', maxLength: 3 });
  });

  it('refuses schemas that cannot be structural', () => {
    expect(() => toStructural(Type.Object({ x: Type.Unknown() }))).toThrow(/every field needs a type/);
    expect(() => toStructural(Type.Union([Type.String(), Type.Integer()]))).toThrow(/anyOf/);
    expect(() => toStructural(Type.Array(Type.String(), { uniqueItems: true }))).toThrow(/uniqueItems/);
    expect(() => toStructural(Type.Intersect([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })]))).toThrow(/allOf/);
    expect(() => toStructural(Type.Record(Type.String({ pattern: '^a' }), Type.String()))).toThrow(/patternProperties/);
  });

  it('serialises CEL rules without their TypeScript mirrors and keeps the mirrors aside', () => {
    const s = withRules(Type.Object({ a: Type.Integer() }, { description: 'o' }), [
      { rule: 'self.a > 0', message: 'a must be positive', fieldPath: '.a', check: (self) => self.a > 0 },
    ]);
    const { root, rules } = toStructural(s);
    expect(root['x-kubernetes-validations']).toEqual([{ rule: 'self.a > 0', message: 'a must be positive', fieldPath: '.a' }]);
    expect(JSON.stringify(root)).not.toContain('check');
    expect(rules.get(root)?.[0]?.check({ a: 1 })).toBe(true);
  });

  it('builds a resource root the apiserver accepts: opaque metadata, spec required', () => {
    const resource = Type.Object({
      apiVersion: Type.Literal('ai.sits2026.dev/v1'),
      kind: Type.Literal('X'),
      metadata: Type.Object({ name: Type.Optional(Type.String()) }),
      spec: Type.Object({ a: Type.Integer({ description: 'a', default: 1 }) }, { description: 'spec' }),
    });
    const { root } = resourceStructuralSchema(resource);
    expect(root.properties?.metadata).toEqual({ type: 'object' });
    expect(root.required).toEqual(['spec']);
    expect(root.properties?.apiVersion?.type).toBe('string');
  });
});

describe('structuralIssues (the checker itself)', () => {
  const ok = { type: 'object' as const, properties: { spec: { description: 'd', type: 'object' as const } } };

  it('accepts a minimal structural schema', () => {
    expect(structuralIssues(ok)).toEqual([]);
  });

  it('finds untyped fields, forbidden keywords and bad anyOf', () => {
    const issues = structuralIssues({
      type: 'object',
      properties: {
        a: { description: 'a' },
        b: { description: 'b', type: 'string', maxLength: 1, ...({ $ref: '#/x' } as object) },
        c: { description: 'c', anyOf: [{ type: 'string' }, { type: 'integer' }] },
      },
    });
    expect(issues.join('\n')).toMatch(/^a: missing type/m);
    expect(issues.join('\n')).toMatch(/b: keyword \$ref is not allowed/);
    expect(issues.join('\n')).toMatch(/c: anyOf is only allowed for int-or-string/);
  });

  it('finds unbounded strings and lists, undocumented fields and undocumented defaults', () => {
    const issues = structuralIssues({
      type: 'object',
      properties: {
        s: { description: 's', type: 'string' },
        l: { description: 'l', type: 'array', items: { type: 'integer' } },
        n: { type: 'integer' },
        d: { description: 'no default mentioned', type: 'integer', default: 3 },
      },
    });
    expect(issues).toEqual(
      expect.arrayContaining(['s: string without maxLength', 'l: array without maxItems', 'n: missing description', 'd: description must say "Default: 3"']),
    );
  });

  it('finds list-map keys that are neither required nor defaulted and CEL field paths that do not resolve', () => {
    const issues = structuralIssues({
      type: 'object',
      properties: {
        l: {
          description: 'l',
          type: 'array',
          maxItems: 2,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
          items: { type: 'object', properties: { name: { description: 'n', type: 'string', maxLength: 3 } } },
        },
        o: { description: 'o', type: 'object', 'x-kubernetes-validations': [{ rule: 'true', message: 'm', fieldPath: '.missing' }] },
      },
    });
    expect(issues).toEqual(
      expect.arrayContaining(['l: map key name must be required or defaulted', 'o.x-kubernetes-validations[0]: fieldPath .missing does not resolve']),
    );
  });
});
