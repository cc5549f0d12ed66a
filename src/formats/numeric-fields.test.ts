/**
 * The workload and cluster files' numeric fields, fuzzed with the mistakes people make in YAML (issue 31: an
 * unquoted `minComputeCapability: 9.0` was read as sm_9 and a Hopper-only pod placed on a T4): numbers written
 * as ints, floats (`4.0`), exponents, with a sign, quoted, negative, NaN-like or not numbers at all. Each value
 * is either read exactly as meant or rejected with an issue naming the file, the line of the field, a column and
 * the field — never silently misread.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { NodeSpec } from '../core/model/node.ts';
import type { Result } from '../core/result.ts';
import { loadClusterText } from './cluster-file.ts';
import { loadWorkloadText, type WorkloadUnit } from './workload-file.ts';
import type { InputError } from './yaml-source.ts';

const FILE = 'fuzz.yaml';

/** A way to write a value: the YAML text, what it means (undefined: nothing valid), and whether it must be read. */
interface Spelling {
  readonly text: string;
  readonly meant: number | undefined;
  /** true: a plain number the field's documentation allows, so it must load; false: loading or a clear error. */
  readonly mustLoad: boolean;
}

/** Texts that are no number of any field (YAML reads them as strings, null, NaN, infinities, booleans, lists). */
const GARBAGE = [
  'NaN',
  '.nan',
  '.NaN',
  'nan',
  '.inf',
  '-.inf',
  '+.inf',
  'Infinity',
  '"NaN"',
  '""',
  '"  "',
  '1,5',
  '9.0.1',
  '0x1G',
  '1_000',
  '~',
  'null',
  'true',
  '[1]',
  '{a: 1}',
  '--1',
  '1 2',
  'sm_',
  'eight',
];

const garbage = fc.constantFrom(...GARBAGE).map((text): Spelling => ({ text, meant: undefined, mustLoad: false }));

/** A number `v` in the ways YAML 1.2 reads as `v` (2, 2.0, 2e0, +2, 0.5, .5), or quoted (a string: may be refused). */
function spellings(v: number): fc.Arbitrary<Spelling> {
  const plain: string[] = Number.isInteger(v)
    ? [`${v}`, `${v}.0`, `${v}e0`, ...(v >= 0 ? [`+${v}`] : [])]
    : [`${v}`, ...(v > 0 && v < 1 ? [`${v}`.slice(1)] : [])];
  return fc.oneof(
    fc.constantFrom(...plain).map((text): Spelling => ({ text, meant: v, mustLoad: true })),
    fc.constant<Spelling>({ text: `"${v}"`, meant: v, mustLoad: false }),
  );
}

/** A numeric field: where it is written, which values it takes, and how to read back what was loaded. */
interface Field<T> {
  readonly name: string;
  /** The file with `value` in place of the field (the field alone on its line). */
  readonly yaml: (value: string) => string;
  readonly line: number;
  readonly path: string;
  readonly values: fc.Arbitrary<number>;
  /** Whether the field takes `v` (outside: the file must be refused). */
  readonly valid: (v: number) => boolean;
  readonly read: (loaded: T) => number;
}

const pod = (field: string, value: string, gpu = '1'): string => `pods:\n  - name: p\n    gpu: ${gpu}\n    ${field}: ${value}\n`;
const onlyPod = (units: readonly WorkloadUnit[]): NonNullable<Extract<WorkloadUnit, { kind: 'pod' }>['pod']> => {
  const u = units[0];
  if (u?.kind !== 'pod') throw new Error('no pod loaded');
  return u.pod;
};
const ints = (min: number, max: number): fc.Arbitrary<number> => fc.oneof(fc.integer({ min, max }), fc.constantFrom(min - 1, min, max, max + 1));
const isInt = (lo: number, hi: number) => (v: number) => Number.isInteger(v) && v >= lo && v <= hi;

const WORKLOAD: readonly Field<readonly WorkloadUnit[]>[] = [
  {
    name: 'gpu',
    yaml: (v) => `pods:\n  - name: p\n    cpuMilli: 1000\n    gpu: ${v}\n`,
    line: 4,
    path: 'pods[0].gpu',
    // Whole devices, or a share of one in thousandths; 0.0004 or 0.3333 are no milli-GPU share.
    values: fc.oneof(ints(0, 64), fc.constantFrom(0.5, 0.25, 0.75, 0.125, 0.3, 0.001, 0.0004, 0.3333, 1.5, 2.5, -0.5)),
    valid: (v) => (Number.isInteger(v) && v >= 0 && v <= 64) || (v > 0 && v < 1 && Math.abs(v * 1000 - Math.round(v * 1000)) < 1e-9),
    read: (u) => {
      const r = onlyPod(u).request;
      return r.gpuCount === 0 ? 0 : r.gpuMilli < 1000 ? r.gpuMilli / 1000 : r.gpuCount;
    },
  },
  {
    name: 'cpuMilli',
    yaml: (v) => pod('cpuMilli', v),
    line: 4,
    path: 'pods[0].cpuMilli',
    values: fc.oneof(ints(0, 256_000), fc.constantFrom(0.5, 1.5)),
    valid: isInt(0, Number.MAX_SAFE_INTEGER),
    read: (u) => onlyPod(u).request.cpuMilli,
  },
  {
    name: 'memoryMiB',
    yaml: (v) => pod('memoryMiB', v),
    line: 4,
    path: 'pods[0].memoryMiB',
    values: fc.oneof(ints(0, 2_000_000), fc.constantFrom(0.5, 1024.5)),
    valid: isInt(0, Number.MAX_SAFE_INTEGER),
    read: (u) => onlyPod(u).request.memoryMiB,
  },
  {
    name: 'gpuMemoryMiB',
    yaml: (v) => pod('gpuMemoryMiB', v),
    line: 4,
    path: 'pods[0].gpuMemoryMiB',
    values: fc.oneof(ints(0, 200_000), fc.constantFrom(0.5)),
    valid: isInt(0, Number.MAX_SAFE_INTEGER),
    read: (u) => onlyPod(u).request.gpuMemoryMiB ?? 0,
  },
  {
    name: 'priority',
    yaml: (v) => pod('priority', v),
    line: 4,
    path: 'pods[0].priority',
    values: fc.oneof(ints(-1000, 1_000_000), fc.constantFrom(0.5, -2.5)),
    valid: isInt(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    read: (u) => onlyPod(u).priority,
  },
  {
    name: 'count',
    yaml: (v) => pod('count', v),
    line: 4,
    path: 'pods[0].count',
    values: fc.oneof(ints(1, 12), fc.constantFrom(0, -1, 2.5)),
    valid: isInt(1, 1_000_000),
    read: (u) => u.length,
  },
];

const shape = (o: { gpuCount?: string; gpuMemoryMiB?: string; cc?: string; cpuMilli?: string; memoryMiB?: string; nodes?: string }): string =>
  [
    'shapes:',
    '  s:',
    '    gpu:',
    '      model: L40S',
    `      count: ${o.gpuCount ?? '4'}`,
    `      memoryMiB: ${o.gpuMemoryMiB ?? '49152'}`,
    `      computeCapability: ${o.cc ?? 'sm_89'}`,
    `    cpuMilli: ${o.cpuMilli ?? '64000'}`,
    `    memoryMiB: ${o.memoryMiB ?? '262144'}`,
    'nodes:',
    '  - namePrefix: n-',
    `    count: ${o.nodes ?? '1'}`,
    '    shape: s',
    '',
  ].join('\n');
const firstNode = (n: readonly NodeSpec[]): NodeSpec => {
  if (n[0] === undefined) throw new Error('no node loaded');
  return n[0];
};

const CLUSTER: readonly Field<readonly NodeSpec[]>[] = [
  {
    name: 'gpu.count',
    yaml: (v) => shape({ gpuCount: v }),
    line: 5,
    path: 'shapes.s.gpu.count',
    values: fc.oneof(ints(0, 64), fc.constantFrom(0.5, 7.5)),
    valid: isInt(0, 64),
    read: (n) => firstNode(n).gpus.length,
  },
  {
    name: 'gpu.memoryMiB',
    yaml: (v) => shape({ gpuMemoryMiB: v }),
    line: 6,
    path: 'shapes.s.gpu.memoryMiB',
    values: fc.oneof(ints(0, 200_000), fc.constantFrom(0.5)),
    valid: isInt(0, Number.MAX_SAFE_INTEGER),
    read: (n) => firstNode(n).gpus[0]?.memoryMiB ?? Number.NaN,
  },
  {
    name: 'cpuMilli',
    yaml: (v) => shape({ cpuMilli: v }),
    line: 8,
    path: 'shapes.s.cpuMilli',
    values: fc.oneof(ints(1, 512_000), fc.constantFrom(0.5)),
    valid: isInt(1, Number.MAX_SAFE_INTEGER),
    read: (n) => firstNode(n).cpuMilli,
  },
  {
    name: 'memoryMiB',
    yaml: (v) => shape({ memoryMiB: v }),
    line: 9,
    path: 'shapes.s.memoryMiB',
    values: fc.oneof(ints(1, 4_000_000), fc.constantFrom(0.5)),
    valid: isInt(1, Number.MAX_SAFE_INTEGER),
    read: (n) => firstNode(n).memoryMiB,
  },
  {
    name: 'nodes count',
    yaml: (v) => shape({ nodes: v }),
    line: 12,
    path: 'nodes[0].count',
    values: fc.oneof(ints(1, 20), fc.constantFrom(1.5)),
    valid: isInt(1, 100_000),
    read: (n) => n.length,
  },
];

/**
 * Compute capability spellings and what each means (the sm code), written independently of the parser: `M.m`
 * and `"M.m"` (major.minor), `sm_NN`, a code of two or three digits from 20, a single-digit major alone. 10 to 19
 * alone are ambiguous (sm_12 or 12.0?), `8.60` has two minor digits: both are refused or read as meant.
 */
const capability: fc.Arbitrary<Spelling> = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 21 }), fc.integer({ min: 0, max: 9 }), fc.boolean()).map(([M, m, quoted]): Spelling => {
    const cc = M * 10 + m;
    const ok = M >= 1 && cc < 200;
    return { text: quoted ? `"${M}.${m}"` : `${M}.${m}`, meant: ok ? cc : undefined, mustLoad: ok };
  }),
  fc.tuple(fc.integer({ min: 1, max: 9 }), fc.boolean()).map(([M, quoted]): Spelling => ({ text: quoted ? `"${M}"` : `${M}`, meant: M * 10, mustLoad: true })),
  fc.tuple(fc.integer({ min: 0, max: 250 }), fc.boolean()).map(([cc, quoted]): Spelling => {
    const ok = cc >= 10 && cc < 200;
    return { text: quoted ? `"sm_${cc}"` : `sm_${cc}`, meant: ok ? cc : undefined, mustLoad: ok };
  }),
  fc.integer({ min: 0, max: 250 }).map((cc): Spelling => {
    const ok = cc >= 20 && cc < 200;
    // A single digit is a major version alone.
    if (cc >= 1 && cc <= 9) return { text: `${cc}`, meant: cc * 10, mustLoad: true };
    return { text: `${cc}`, meant: ok ? cc : undefined, mustLoad: ok };
  }),
  fc
    .tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 0, max: 9 }))
    .map(([M, m]): Spelling => ({ text: `${M}.${m}0`, meant: M * 10 + m, mustLoad: false })),
  fc.constantFrom('-9.0', '-90', '0', '0.0', '9.10', '9.0.1', 'sm_9', '12', '10').map((text): Spelling => ({ text, meant: undefined, mustLoad: false })),
  garbage,
);

/** The property: read exactly as meant, or refused with issues at the field (file, its line, a column, its path). */
function check<T>(r: Result<T, InputError>, s: Spelling, f: { line: number; path: string; read: (t: T) => number }): void {
  const what = `${f.path}: ${s.text}`;
  if (r.ok) {
    expect(s.meant, `${what} loaded, but means nothing valid`).toBeDefined();
    expect(f.read(r.value), what).toBe(s.meant);
    return;
  }
  expect(s.mustLoad, `${what} was refused: ${r.error.message}`).toBe(false);
  expect(r.error.issues.length, what).toBeGreaterThan(0);
  for (const i of r.error.issues) {
    expect(i, what).toMatchObject({ file: FILE, line: f.line, field: f.path });
    expect(i.column, what).toBeGreaterThan(0);
    expect(i.message, what).not.toBe('');
    // NaN and the infinities are named as such, not as JSON's null.
    if (!/null|~/.test(s.text)) expect(i.message, what).not.toContain('got null');
  }
}

/** Integers and floats of a field: spelled every way, or garbage; `meant` only when the field takes the value. */
function fieldSpelling<T>(f: Field<T>): fc.Arbitrary<Spelling> {
  return fc.oneof(
    { weight: 4, arbitrary: f.values.chain((v) => spellings(v).map((s) => (f.valid(v) ? s : { ...s, meant: undefined, mustLoad: false }))) },
    { weight: 1, arbitrary: garbage },
  );
}

describe('numeric fields of the workload file', () => {
  for (const f of WORKLOAD) {
    it(`${f.name}: read as meant or refused at ${f.path}`, () => {
      fc.assert(
        fc.property(fieldSpelling(f), (s) => check(loadWorkloadText(FILE, f.yaml(s.text)), s, f)),
        { numRuns: 300 },
      );
    });
  }

  it('minComputeCapability: 9.0, 9, "sm_90", "9.0", 8.6, "8.6" as meant; the rest refused at the field', () => {
    const read = (u: readonly WorkloadUnit[]): number => onlyPod(u).minComputeCapability;
    const at = { line: 4, path: 'pods[0].minComputeCapability', read };
    for (const [text, cc] of [
      ['9.0', 90],
      ['9', 90],
      ['"sm_90"', 90],
      ['"9.0"', 90],
      ['8.6', 86],
      ['"8.6"', 86],
      ['sm_90', 90],
      ['90', 90],
      ['12.0', 120],
      ['10.0', 100],
    ] as const) {
      const r = loadWorkloadText(FILE, pod('minComputeCapability', text));
      expect(r.ok && read(r.value), text).toBe(cc);
    }
    fc.assert(
      fc.property(capability, (s) => check(loadWorkloadText(FILE, pod('minComputeCapability', s.text)), s, at)),
      { numRuns: 1000 },
    );
  });

  it('minComputeCapability in a gang member: the same reading', () => {
    const r = loadWorkloadText(FILE, 'gangs:\n  - name: g\n    replicas: 2\n    pod: {gpu: 1, minComputeCapability: 9.0}\n');
    expect(r.ok && r.value[0]?.kind === 'gang' ? r.value[0].gang.members.map((m) => m.minComputeCapability) : r).toEqual([90, 90]);
  });
});

describe('numeric fields of the cluster file', () => {
  for (const f of CLUSTER) {
    it(`${f.name}: read as meant or refused at ${f.path}`, () => {
      fc.assert(
        fc.property(fieldSpelling(f), (s) => check(loadClusterText(FILE, f.yaml(s.text)), s, f)),
        { numRuns: 300 },
      );
    });
  }

  it('gpu.computeCapability: read as meant or refused at the field', () => {
    const at = { line: 7, path: 'shapes.s.gpu.computeCapability', read: (n: readonly NodeSpec[]) => firstNode(n).gpus[0]?.computeCapability ?? Number.NaN };
    fc.assert(
      fc.property(capability, (s) => check(loadClusterText(FILE, shape({ cc: s.text })), s, at)),
      { numRuns: 1000 },
    );
  });
});
