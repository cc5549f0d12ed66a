import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ELASTIC_TRAINING_JOB, EXAMPLES, INVALID_CASES, SEED_TRAINING_JOB } from './examples.ts';
import { structuralSchemaOf } from './crd.ts';
import { RESOURCE_KINDS, type ResourceKind } from './kinds.ts';
import type { JSONSchemaProps } from './structural.ts';
import { trainingJobGpusPerReplica, type TrainingJob } from './schema/training-job.ts';
import { queueWeight } from './schema/queue.ts';
import { formatErrors, validateManifest, validateResource, withDefaults, type FieldError } from './validate.ts';

function errorsOf(result: { ok: boolean; errors?: FieldError[] }): FieldError[] {
  return result.ok ? [] : (result.errors ?? []);
}

/** True when an error names `path` itself or a key/field below it (map keys print as [key]). */
function names(errors: readonly FieldError[], path: string): boolean {
  return errors.some((e) => e.path === path || e.path.startsWith(`${path}[`) || e.path.startsWith(`${path}.`));
}

function spec(obj: Record<string, unknown>): Record<string, unknown> {
  return obj.spec as Record<string, unknown>;
}

describe('the seed TrainingJob', () => {
  it('validates exactly as written in seed 000', () => {
    const r = validateResource('TrainingJob', SEED_TRAINING_JOB);
    expect(errorsOf(r)).toEqual([]);
  });

  it('comes back with the apiserver defaults filled in and the input untouched', () => {
    const before = JSON.stringify(SEED_TRAINING_JOB);
    const r = validateResource('TrainingJob', SEED_TRAINING_JOB);
    expect(JSON.stringify(SEED_TRAINING_JOB)).toBe(before);
    if (!r.ok) throw new Error(formatErrors(r.errors));
    expect(r.value.spec).toMatchObject({
      replicas: 8,
      topology: { strategy: 'ring-allreduce' },
      resources: { 'nvidia.com/gpu': 1, 'memory-gpu-optimized': '32Gi' },
      restartPolicy: 'OnFailure',
      backoffLimit: 3,
      cleanPodPolicy: 'Running',
      masterPort: 29500,
      suspend: false,
      nccl: { ibDisable: false, socketTimeout: 1200, asyncErrorHandling: true, timeoutSeconds: 1800 },
    });
    expect(trainingJobGpusPerReplica(r.value.spec)).toBe(1);
  });

  it('gives controllers non-optional types for defaulted fields', () => {
    expectTypeOf<TrainingJob['spec']['replicas']>().toEqualTypeOf<number>();
    expectTypeOf<TrainingJob['spec']['nccl']['socketTimeout']>().toEqualTypeOf<number>();
    expectTypeOf<TrainingJob['spec']['topology']['strategy']>().toEqualTypeOf<
      'ring-allreduce' | 'tree-allreduce' | 'hierarchical-allreduce' | 'parameter-server' | 'none'
    >();
    expectTypeOf<TrainingJob['spec']['minReplicas']>().toEqualTypeOf<number | undefined>();
  });
});

describe('examples', () => {
  it.each(RESOURCE_KINDS)('the %s example is valid', (kind) => {
    expect(errorsOf(validateResource(kind, EXAMPLES[kind]))).toEqual([]);
  });

  it('the elastic TrainingJob with a pod template is valid', () => {
    expect(errorsOf(validateResource('TrainingJob', ELASTIC_TRAINING_JOB))).toEqual([]);
  });
});

describe('invalid manifests are rejected with the field named', () => {
  it.each(INVALID_CASES.map((c) => [`${c.kind}: ${c.name}`, c] as const))('%s', (_name, c) => {
    const r = validateResource(c.kind, c.manifest);
    expect(r.ok).toBe(false);
    const errors = errorsOf(r);
    expect(names(errors, c.path), `expected ${c.path} in:\n${formatErrors(errors)}`).toBe(true);
  });

  it('exercise every CEL rule of every kind (so the e2e run checks each one on a real apiserver)', () => {
    const messages = (kind: ResourceKind): Set<string> => {
      const { root, rules } = structuralSchemaOf(kind);
      const out = new Set<string>();
      const walk = (n: JSONSchemaProps) => {
        for (const r of rules.get(n) ?? []) out.add(r.message);
        for (const p of Object.values(n.properties ?? {})) walk(p);
        if (n.items) walk(n.items);
        if (n.additionalProperties) walk(n.additionalProperties);
      };
      walk(root);
      return out;
    };
    const missing = RESOURCE_KINDS.flatMap((kind) => {
      const hit = new Set(INVALID_CASES.filter((c) => c.kind === kind).flatMap((c) => errorsOf(validateResource(kind, c.manifest)).map((e) => e.message)));
      return [...messages(kind)].filter((m) => !hit.has(m)).map((m) => `${kind}: ${m}`);
    });
    expect(missing).toEqual([]);
  });

  it('covers issue 5: replicas 0, minReplicas > maxReplicas, unknown strategy, negative GPUs', () => {
    const byName = (n: string) => INVALID_CASES.find((c) => c.kind === 'TrainingJob' && c.name === n);
    expect(byName('replicas 0')?.path).toBe('spec.replicas');
    expect(byName('minReplicas > maxReplicas')?.path).toBe('spec.minReplicas');
    expect(byName('unknown topology strategy')?.path).toBe('spec.topology.strategy');
    expect(byName('negative GPUs in resources')?.path).toBe('spec.resources');
    expect(byName('negative gpusPerReplica')?.path).toBe('spec.gpusPerReplica');
  });

  it('names map keys and list indices the way the apiserver does', () => {
    const negative = structuredClone(SEED_TRAINING_JOB);
    (spec(negative).resources as Record<string, unknown>)['nvidia.com/gpu'] = -1;
    const errors = errorsOf(validateResource('TrainingJob', negative));
    expect(errors).toEqual([{ path: 'spec.resources[nvidia.com/gpu]', code: 'Invalid', message: 'Invalid value: -1: should be greater than or equal to 0' }]);
  });

  it('reports an unknown enum value with the supported values', () => {
    const bad = structuredClone(SEED_TRAINING_JOB);
    spec(bad).topology = { strategy: 'butterfly' };
    expect(errorsOf(validateResource('TrainingJob', bad))).toEqual([
      {
        path: 'spec.topology.strategy',
        code: 'NotSupported',
        message: 'Unsupported value: "butterfly": supported values: "ring-allreduce", "tree-allreduce", "hierarchical-allreduce", "parameter-server", "none"',
      },
    ]);
  });

  it('reports CEL failures with the rule message and reason', () => {
    const bad = structuredClone(SEED_TRAINING_JOB);
    delete spec(bad).container;
    expect(errorsOf(validateResource('TrainingJob', bad))).toEqual([{ path: 'spec.container', code: 'Required', message: 'set container or podTemplate' }]);
  });

  it('reports unknown fields, as kubectl apply --validate=strict does', () => {
    const bad = structuredClone(SEED_TRAINING_JOB);
    spec(bad).replica = 3;
    expect(errorsOf(validateResource('TrainingJob', bad))).toEqual([{ path: 'spec.replica', code: 'UnknownField', message: 'unknown field "spec.replica"' }]);
  });

  it('reports missing required fields once', () => {
    const bad = structuredClone(EXAMPLES.BatchInferenceJob);
    delete spec(bad).input;
    expect(errorsOf(validateResource('BatchInferenceJob', bad))).toEqual([{ path: 'spec.input', code: 'Required', message: 'Required value' }]);
  });

  it('checks apiVersion and kind', () => {
    const wrongKind = { ...SEED_TRAINING_JOB, kind: 'PyTorchJob' };
    expect(names(errorsOf(validateResource('TrainingJob', wrongKind)), 'kind')).toBe(true);
    const wrongVersion = { ...SEED_TRAINING_JOB, apiVersion: 'ai.sits2026.dev/v1beta1' };
    expect(names(errorsOf(validateResource('TrainingJob', wrongVersion)), 'apiVersion')).toBe(true);
  });

  it('rejects what is not an object', () => {
    expect(errorsOf(validateResource('Queue', 'queue'))).toEqual([{ path: '', code: 'TypeInvalid', message: 'Invalid value: "queue": must be an object' }]);
    expect(validateResource('Queue', null).ok).toBe(false);
  });

  it('limits names reused as pod hostnames', () => {
    const long = { ...SEED_TRAINING_JOB, metadata: { name: 'x'.repeat(49) } };
    expect(errorsOf(validateResource('TrainingJob', long))).toEqual([
      {
        path: 'metadata',
        code: 'Invalid',
        message: 'metadata.name must be at most 48 characters: pod hostnames <name>-<rank> and the headless Service must stay valid DNS labels',
      },
    ]);
  });

  it('validates status too (controllers write it through the same schema)', () => {
    const withStatus = {
      ...SEED_TRAINING_JOB,
      status: {
        phase: 'Running',
        readyReplicas: 8,
        conditions: [
          { type: 'Running', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'AllReplicasReady', message: '8/8 ready' },
          { type: 'Running', status: 'False', lastTransitionTime: 'yesterday', reason: 'x', message: '' },
        ],
      },
    };
    const errors = errorsOf(validateResource('TrainingJob', withStatus));
    expect(names(errors, 'status.conditions[1]')).toBe(true);
    expect(errors.map((e) => e.code)).toEqual(expect.arrayContaining(['Duplicate', 'Invalid']));
  });
});

describe('defaulting', () => {
  it('fills nested defaults under a defaulted object, like the apiserver', () => {
    const bij = structuredClone(EXAMPLES.BatchInferenceJob);
    delete spec(bij).batching;
    const r = validateResource('BatchInferenceJob', bij);
    if (!r.ok) throw new Error(formatErrors(r.errors));
    expect(r.value.spec.batching).toEqual({ batchSize: 32, seqLen: 2048, kvCachePolicy: 'recycle', throughputMode: 'steady' });
    expect(r.value.spec.faultRecovery).toEqual({ maxRetries: 3, retryAtReducedClock: true, splitOnRetry: true, cpuFallback: false, quarantineMinutes: 15 });
  });

  it('treats null like absent: defaulted when there is a default, pruned otherwise', () => {
    const tj = structuredClone(SEED_TRAINING_JOB);
    spec(tj).backoffLimit = null;
    spec(tj).minReplicas = null;
    const r = validateResource('TrainingJob', tj);
    if (!r.ok) throw new Error(formatErrors(r.errors));
    expect(r.value.spec.backoffLimit).toBe(3);
    expect('minReplicas' in r.value.spec).toBe(false);
  });

  it('never overrides a value the user set', () => {
    const d = withDefaults('TrainingJob', { ...SEED_TRAINING_JOB, spec: { ...spec(SEED_TRAINING_JOB), backoffLimit: 0, nccl: { socketTimeout: 600 } } }) as {
      spec: TrainingJob['spec'];
    };
    expect(d.spec.backoffLimit).toBe(0);
    expect(d.spec.nccl).toEqual({ ibDisable: false, socketTimeout: 600, asyncErrorHandling: true, timeoutSeconds: 1800, topologyFile: true });
  });
});

describe('validateManifest', () => {
  it('dispatches on kind', () => {
    const r = validateManifest(EXAMPLES.Queue);
    expect(r.ok).toBe(true);
    if (r.ok && r.value.kind === 'Queue') expect(queueWeight(r.value.spec)).toBe(4);
  });

  it('refuses other groups and kinds', () => {
    expect(errorsOf(validateManifest({ apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob' }))[0]?.path).toBe('apiVersion');
    expect(errorsOf(validateManifest({ apiVersion: 'ai.sits2026.dev/v1', kind: 'Notebook' }))[0]?.path).toBe('kind');
  });

  it('formats errors one per line with the path first', () => {
    expect(
      formatErrors([
        { path: 'spec.replicas', code: 'Invalid', message: 'Invalid value: 0' },
        { path: '', code: 'TypeInvalid', message: 'x' },
      ]),
    ).toBe('spec.replicas: Invalid value: 0\nx');
  });
});

describe('docs/crds.md', () => {
  const doc = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), '../../docs/crds.md'), 'utf8');
  const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parse(m[1] ?? '') as unknown);

  it('shows one valid example per kind, the first being the seed exactly', () => {
    expect(blocks.length).toBe(RESOURCE_KINDS.length);
    expect(blocks[0]).toEqual(SEED_TRAINING_JOB);
    for (const b of blocks) expect(errorsOf(validateManifest(b)), JSON.stringify(b)).toEqual([]);
    expect(blocks.map((b) => (b as { kind: string }).kind).sort()).toEqual([...RESOURCE_KINDS].sort());
  });
});
