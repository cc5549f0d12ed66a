import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cpuMsSince, scaled } from '../testing/timeouts.ts';
import { parseAllDocuments } from 'yaml';
import { lintObjects } from './engine.ts';
import { at } from './pod-specs.ts';
import type { FieldPath, KubeObject } from './rule.ts';
import { FIXTURE_CLUSTER, RULES } from './rules/index.ts';

// Every fixture document is a realistic starting point; the fuzzer overwrites random fields of a few of them with
// arbitrary values (wrong types, deep nesting, huge strings) and checks that no rule throws and that every finding
// points at a field that exists in the object it names.
const FIXTURES: readonly KubeObject[][] = RULES.flatMap((r) => [r.fixtures.bad, r.fixtures.good]).map((y) =>
  parseAllDocuments(y).map((d) => d.toJS() as KubeObject),
);

function paths(v: unknown, prefix: FieldPath = [], out: FieldPath[] = []): FieldPath[] {
  out.push(prefix);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...prefix, i], out));
  else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) paths(x, [...prefix, k], out);
  return out;
}

function setAt(root: unknown, path: FieldPath, value: unknown): unknown {
  if (path.length === 0) return value;
  const parent = at(root, path.slice(0, -1));
  const last = path[path.length - 1];
  if (typeof parent === 'object' && parent !== null && last !== undefined) (parent as Record<string | number, unknown>)[last] = value;
  return root;
}

// JSON values only: what YAML or an AdmissionReview can carry (no undefined, functions or symbols).
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.constantFrom('', '0', '-1', '1e999', '500m', 'None', 'all', '--num-workers', 'torchrun', '/ckpt', 'a.b.svc', 'NaN'),
  fc.integer({ min: -3, max: 1e9 }),
  fc.string({ maxLength: 3000 }),
);

describe('rules under fuzzed input', () => {
  it('stay linear on pathological strings (long runs of quotes, colons, spaces, digits)', () => {
    const big = (w: string) => w.repeat(200_000);
    const words = [`/a${big('/')}`, `x${big('"')}y`, `${big(':')}\n`, `num_workers${big(' ')}x`, `${big('1.')}x`, `${big('/hf')}x`, `--${big('-')}=`];
    const objects = words.map((w, i) => ({
      kind: 'Pod',
      metadata: { name: `p${i}`, labels: { 'ai.sits2026.dev/pod-group': w } },
      spec: {
        containers: [
          {
            name: 'c',
            image: w,
            command: [w],
            args: [w, w],
            env: [
              { name: 'MASTER_ADDR', value: w },
              { name: 'NUM_WORKERS', value: w },
            ],
            volumeMounts: [{ name: 'v', mountPath: w }],
            resources: { limits: { cpu: w, 'nvidia.com/gpu': w } },
          },
        ],
        volumes: [{ name: 'v', csi: { driver: w } }],
      },
    }));
    const t0 = process.cpuUsage();
    const findings = lintObjects(objects as KubeObject[], RULES, { cluster: FIXTURE_CLUSTER });
    expect(findings.filter((f) => f.rule === 'rule-failed')).toEqual([]);
    expect(cpuMsSince(t0)).toBeLessThan(scaled(2000));
  });

  it('stay near-linear on a 2.6 MB pod spec with 5,000 env entries, mounts and volumes and 100,000 arguments', () => {
    const n = 5000;
    const obj = {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'huge' },
      spec: {
        replicas: 4,
        template: {
          spec: {
            containers: [
              {
                name: 'c',
                command: ['torchrun', '--checkpoint-dir', '/a'.repeat(100_000)],
                args: [Array.from({ length: 100_000 }, (_, i) => `--model=/x/${i % n}/m`).join(' ')],
                env: Array.from({ length: n }, (_, i) => ({ name: `CKPT_${i}`, value: `/x/${i}/ckpt` })),
                volumeMounts: Array.from({ length: n }, (_, i) => ({ name: `v${i}`, mountPath: `/x/${i}` })),
              },
            ],
            volumes: Array.from({ length: n }, (_, i) => ({ name: `v${i}`, nfs: { server: 'nfs', path: '/' } })),
          },
        },
      },
    };
    const t0 = process.cpuUsage();
    const findings = lintObjects([obj], RULES, { cluster: FIXTURE_CLUSTER });
    // Quadratic mount × argument matching took 7.8 s here; by-path lookups take about 1.2 s of CPU on this machine.
    expect(cpuMsSince(t0)).toBeLessThan(scaled(4000));
    expect(findings.filter((f) => f.rule === 'shared-weights-without-local-cache')).toHaveLength(n);
    expect(findings.filter((f) => f.rule === 'checkpoint-on-pod-local-storage')).toHaveLength(1);
  });

  it('never throw and only point at fields that exist (2,000 mutated sets)', () => {
    fc.assert(
      fc.property(fc.nat(FIXTURES.length - 1), fc.array(fc.tuple(fc.nat(), fc.nat(), value), { minLength: 1, maxLength: 6 }), (which, edits) => {
        const objects = structuredClone(FIXTURES[which] ?? []) as unknown[];
        for (const [o, p, v] of edits) {
          const i = o % objects.length;
          const all = paths(objects[i]);
          const path = all[p % all.length] ?? [];
          objects[i] = setAt(objects[i], path, structuredClone(v));
        }
        const findings = lintObjects(objects as KubeObject[], RULES, { cluster: FIXTURE_CLUSTER });
        for (const f of findings) {
          expect(f.rule, f.message).not.toBe('rule-failed');
          expect(at(objects[f.object], f.path), `${f.rule} at ${f.path.join('.')}`).not.toBeUndefined();
        }
      }),
      { numRuns: 2000 },
    );
  });
});
