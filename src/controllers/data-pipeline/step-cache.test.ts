import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { CacheEntry } from './model.ts';
import { cacheKey, lookup, type StepCacheInput } from './step-cache.ts';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const base: StepCacheInput = {
  spec: { image: 'ghcr.io/x/export:1.2', args: ['--merge', '--dtype', 'bf16'], env: { A: '1', B: '2' }, resources: { gpu: 1 } },
  inputs: [
    { name: 'adapter', artifact: { kind: 'snapshot', name: 'ft-adapter-1', uid: 'u-1' } },
    { name: 'base', artifact: { kind: 'volume', claim: 'models', path: '/llama-8b', contentId: 'c-9' } },
  ],
  imageDigest: DIGEST,
};

const key = (i: StepCacheInput): string => {
  const r = cacheKey(i);
  if (!r.ok) throw new Error(`${r.error.field}: ${r.error.message}`);
  return r.value;
};

/** Rebuilds every object of `v` with its keys rotated by `seed` and reversed (same data, other key order). */
function reorder(v: unknown, seed: number): unknown {
  if (Array.isArray(v)) return v.map((x) => reorder(x, seed + 1));
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v);
    const r = entries.length === 0 ? 0 : seed % entries.length;
    const turned = [...entries.slice(r), ...entries.slice(0, r)].reverse();
    return Object.fromEntries(turned.map(([k, x]) => [k, reorder(x, seed + 1)]));
  }
  return v;
}

describe('cacheKey', () => {
  it('is a sha256 and stable for the same input', () => {
    const k = key(base);
    expect(k).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(key(structuredClone(base))).toBe(k);
  });

  it('does not depend on key order or on the order inputs are listed', () => {
    const k = key(base);
    const spec = reorder(base.spec, 3);
    expect(Object.keys(spec as object)).not.toEqual(Object.keys(base.spec as object));
    expect(key({ ...base, spec, inputs: [...base.inputs].reverse() })).toBe(k);
  });

  it('changes with the spec, an input identity or the image digest', () => {
    const k = key(base);
    expect(key({ ...base, spec: { ...(base.spec as object), args: ['--merge'] } })).not.toBe(k);
    const snap = base.inputs[0];
    if (snap === undefined) throw new Error('fixture');
    // Same snapshot name, re-created: another uid is other data.
    expect(
      key({
        ...base,
        inputs: [{ name: 'adapter', artifact: { kind: 'snapshot', name: 'ft-adapter-1', uid: 'u-2' } }, base.inputs[1] as (typeof base.inputs)[number]],
      }),
    ).not.toBe(k);
    expect(key({ ...base, inputs: [snap, { name: 'base', artifact: { kind: 'volume', claim: 'models', path: '/llama-8b', contentId: 'c-10' } }] })).not.toBe(k);
    // The same artifact under another input name is another step.
    expect(key({ ...base, inputs: [{ ...snap, name: 'lora' }, base.inputs[1] as (typeof base.inputs)[number]] })).not.toBe(k);
    expect(key({ ...base, imageDigest: `sha256:${'b'.repeat(64)}` })).not.toBe(k);
    const { imageDigest: _d, ...unpinned } = base;
    expect(key(unpinned)).not.toBe(k);
  });

  it('drops undefined members as JSON does (a spec read back from the apiserver keys the same)', () => {
    expect(key({ ...base, spec: { ...(base.spec as object), extra: undefined } })).toBe(key(base));
  });

  it('names the field of what cannot be keyed', () => {
    const bad = (i: StepCacheInput): string => {
      const r = cacheKey(i);
      return r.ok ? 'ok' : `${r.error.field}: ${r.error.message}`;
    };
    expect(bad({ ...base, spec: { a: [1, Number.NaN] } })).toBe('spec.a[1]: NaN is not a JSON number');
    expect(bad({ ...base, spec: { when: new Date(0) } })).toBe('spec.when: a Date object is not plain JSON data');
    expect(bad({ ...base, spec: { f: () => 1 } })).toBe('spec.f: a function is not JSON data');
    expect(bad({ ...base, spec: { n: 1n } })).toBe('spec.n: a bigint is not JSON data');
    expect(bad({ ...base, imageDigest: 'latest' })).toBe('imageDigest: "latest" is not sha256:<64 lowercase hex>');
    expect(bad({ ...base, inputs: [base.inputs[0] as (typeof base.inputs)[number], base.inputs[0] as (typeof base.inputs)[number]] })).toBe(
      'inputs[1].name: input adapter is given twice',
    );
    expect(bad({ ...base, inputs: [{ name: 'a', artifact: { kind: 'snapshot', name: 's', uid: '' } }] })).toBe('inputs[0].artifact.uid: must not be empty');
    expect(bad({ ...base, inputs: [{ name: 'a', artifact: { kind: 'pvc', name: 's' } as never }] })).toBe(
      'inputs[0].artifact.kind: unknown artifact kind "pvc": snapshot or volume',
    );
  });

  it('property: deterministic and key-order independent for any JSON spec', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 1000 }), (spec, seed) => {
        // fast-check's jsonValue may give -0, which JSON writes as 0: the same document, the same key.
        const a = key({ spec, inputs: [] });
        expect(key({ spec: structuredClone(spec), inputs: [] })).toBe(a);
        expect(key({ spec: reorder(spec, seed), inputs: [] })).toBe(a);
      }),
      { numRuns: 300 },
    );
  });

  it('property: input list order never matters, input identity always does', () => {
    const input = fc.record({ name: fc.string({ minLength: 1, maxLength: 8 }), uid: fc.string({ minLength: 1, maxLength: 8 }) });
    fc.assert(
      fc.property(fc.uniqueArray(input, { selector: (x) => x.name, minLength: 1, maxLength: 6 }), (xs) => {
        const inputs = xs.map((x) => ({ name: x.name, artifact: { kind: 'snapshot' as const, name: 'snap', uid: x.uid } }));
        const k = key({ spec: {}, inputs });
        expect(key({ spec: {}, inputs: [...inputs].reverse() })).toBe(k);
        const changed = inputs.map((x, i) => (i === 0 ? { ...x, artifact: { ...x.artifact, uid: `${x.artifact.uid}!` } } : x));
        expect(key({ spec: {}, inputs: changed })).not.toBe(k);
      }),
      { numRuns: 200 },
    );
  });
});

describe('lookup', () => {
  const k = key(base);
  const t0 = new Date('2026-12-01T10:00:00Z');
  const at = (min: number): Date => new Date(t0.getTime() + min * 60_000);
  const entry = (run: string, phase: CacheEntry['phase'], finishedMin: number, extra: Partial<CacheEntry> = {}): CacheEntry => ({
    key: k,
    run,
    step: 'export',
    phase,
    finishedAt: at(finishedMin),
    outputs: { model: { snapshot: `${run}-model` } },
    ...extra,
  });

  it('reuses the newest success with the same key and names it', () => {
    const h = [
      entry('run-1', 'Succeeded', 0),
      entry('run-3', 'Succeeded', 20),
      entry('run-2', 'Failed', 30),
      { ...entry('other', 'Succeeded', 40), key: 'sha256:other' },
    ];
    const r = lookup(k, h, at(50));
    expect(r).toMatchObject({ hit: true, ageSeconds: 1800, reason: 'reused run-3/export, succeeded 30m ago with the same spec and inputs' });
    expect(r.hit && r.entry.outputs).toEqual({ model: { snapshot: 'run-3-model' } });
  });

  it('misses with a reason: opted out, never ran, only failures, outputs gone, too old', () => {
    expect(lookup(k, [entry('run-1', 'Succeeded', 0)], at(1), { enabled: false })).toEqual({ hit: false, reason: 'cache: false on this step' });
    expect(lookup(k, [], at(1))).toEqual({ hit: false, reason: 'no earlier run of this step with the same spec and inputs' });
    expect(lookup(k, [entry('run-1', 'Failed', 0), entry('run-2', 'Failed', 5)], at(10))).toEqual({
      hit: false,
      reason: 'earlier runs with the same inputs failed (2); failures are not reused',
    });
    expect(lookup(k, [entry('run-1', 'Succeeded', 0, { outputsAvailable: false })], at(10))).toEqual({
      hit: false,
      reason: 'the outputs of run-1/export were garbage-collected',
    });
    expect(lookup(k, [entry('run-1', 'Succeeded', 0)], at(180), { maxAgeSeconds: 3600 })).toEqual({
      hit: false,
      reason: 'the newest success (run-1/export) is 3h old, over maxAge 60m',
    });
  });

  it('skips a success whose outputs were collected for an older one that still has them', () => {
    const r = lookup(k, [entry('run-1', 'Succeeded', 0), entry('run-2', 'Succeeded', 10, { outputsAvailable: false })], at(20));
    expect(r.hit && r.entry.run).toBe('run-1');
  });

  it('maxAge is inclusive and clock skew counts as age 0', () => {
    expect(lookup(k, [entry('run-1', 'Succeeded', 0)], at(60), { maxAgeSeconds: 3600 }).hit).toBe(true);
    expect(lookup(k, [entry('run-1', 'Succeeded', 5)], at(0))).toMatchObject({ hit: true, ageSeconds: 0 });
  });

  it('property: the answer does not depend on the order of the history', () => {
    const arb = fc.array(fc.record({ run: fc.constantFrom('a', 'b', 'c', 'd'), ok: fc.boolean(), min: fc.integer({ min: 0, max: 100 }), kept: fc.boolean() }), {
      maxLength: 12,
    });
    fc.assert(
      fc.property(arb, fc.integer({ min: 0, max: 200 }), fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }), (xs, nowMin, maxAge) => {
        const h = xs.map((x) => entry(x.run, x.ok ? 'Succeeded' : 'Failed', x.min, { outputsAvailable: x.kept }));
        const policy = maxAge === undefined ? {} : { maxAgeSeconds: maxAge };
        const a = lookup(k, h, at(nowMin), policy);
        expect(lookup(k, [...h].reverse(), at(nowMin), policy)).toEqual(a);
        if (a.hit) {
          expect(a.entry.phase).toBe('Succeeded');
          expect(a.entry.outputsAvailable).not.toBe(false);
          if (maxAge !== undefined) expect(a.ageSeconds).toBeLessThanOrEqual(maxAge);
        }
      }),
      { numRuns: 300 },
    );
  });
});
